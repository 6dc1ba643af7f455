// viz/glossary.cpp — the app's "(?)" notes come from the course glossary (lessons/lib/glossary.hpp),
// so the command line and the app explain a term in the same words.
#include "viz/glossary.hpp"

#include "lessons/lib/glossary.hpp"

namespace viz {

std::string_view glossary(std::string_view term) {
    if (!lessons::glossary_has(term))
        return "(no glossary entry for this term: add it to viz/glossary.cpp's source, lessons/lib/glossary.hpp)";
    return lessons::glossary(term);
}
bool glossary_has(std::string_view term) { return lessons::glossary_has(term); }

}  // namespace viz
