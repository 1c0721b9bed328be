"""RDF terms: parsing, validation reasons, the canonical N-Triples form and SPARQL JSON."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from schemas.formats.base import per_distinct
from schemas.terms import CANONICAL_AS_IS, RDF_LANGSTRING, XSD, XSD_STRING, Term, TermError, canonical_nt, \
    parse_term, read_term, term_to_sparql_json

INT = f"<{XSD}integer>"


@pytest.mark.parametrize("text, kind, value, datatype, lang", [
    ("<http://ex.org/a>", "iri", "http://ex.org/a", None, None),
    ("<http://ex.org/\\u00E9t\\U0001F600>", "iri", "http://ex.org/ét\U0001F600", None, None),
    ("<urn:isbn:0451450523>", "iri", "urn:isbn:0451450523", None, None),
    ("_:b1", "bnode", "b1", None, None),
    ('"plain"', "literal", "plain", XSD_STRING, None),
    ('"x"@EN-gb', "literal", "x", RDF_LANGSTRING, "en-gb"),
    (f'"01"^^{INT}', "literal", "01", f"{XSD}integer", None),
    ('"a\\tb\\"c\\\\d\\u00e9"', "literal", 'a\tb"c\\dé', XSD_STRING, None),
    ('"x"^^<http://ex.org/myType>', "literal", "x", "http://ex.org/myType", None),
])
def test_parse_term(text, kind, value, datatype, lang):
    term = parse_term(text)
    assert (term.kind, term.value, term.datatype, term.lang) == (kind, value, datatype, lang)


@pytest.mark.parametrize("text, canonical", [
    (f'"a"^^<{XSD}string>', '"a"'),
    ('"x"@EN', '"x"@en'),
    ('"\\u0041\\b\\f\\\'"', '"A\\u0008\\u000C\'"'),
    ('"tab\\there\\nnew\\rcr"', '"tab\\there\\nnew\\rcr"'),
    ('"del\\u007F nul\\u0000"', '"del\\u007F nul\\u0000"'),
    ('"caf\\u00E9 \\U0001F600"', '"café \U0001F600"'),
    (f'"01"^^{INT}', f'"01"^^{INT}'),
    ("<http://ex.org/\\u0041>", "<http://ex.org/A>"),
])
def test_canonical_form(text, canonical):
    assert parse_term(text).nt == canonical
    assert parse_term(canonical).nt == canonical          # canonical is a fixed point


def test_terms_matched_in_arrow_as_canonical_are_canonical():
    """The readers pass a term matching CANONICAL_AS_IS through without parsing it, so each one
    must be canonical already; and a column canonicalised that way equals one done term by term."""
    terms = ["<http://ex.org/a>", '"plain"', '"café"', "<http://ex.org/é>", '"x"@EN', f'"a"^^<{XSD}string>',
             '"tab\\there"', "<http://ex.org/\\u0041>", "_:b1", f'"01"^^{INT}', '"\x7f"', "<relative>",
             "<http://ex.org/a b>", '"two"\n', "<http://ex.org/a>\n", '""', "<urn:x>"]
    matched = pc.match_substring_regex(pa.array(terms), CANONICAL_AS_IS).to_pylist()
    assert matched == [True, True, True, True, False, False, False, False, False, False, False, False, False,
                       False, False, True, True]
    for term, as_is in zip(terms, matched):
        if as_is:
            assert canonical_nt(term) == term
    good = [t for t in terms if "\n" not in t and t not in ("<relative>", "<http://ex.org/a b>", '"\x7f"')]
    column = pa.array(good * 2 + [None])
    assert per_distinct(column, canonical_nt, CANONICAL_AS_IS).to_pylist() == \
        [canonical_nt(t) for t in good * 2] + [None]


def test_equal_terms_compare_equal():
    assert parse_term('"a"') == parse_term(f'"a"^^<{XSD}string>')
    assert parse_term('"a"@EN') == parse_term('"a"@en')
    assert parse_term('"a"') != parse_term('"a"@en')


@pytest.mark.parametrize("text, reason", [
    ("<http://ex.org/a", "unterminated IRI"),
    ("<http://ex.org/a b>", "space in IRI"),
    ("<relative/path>", "relative IRI"),
    ("<http://ex.org/{x}>", "invalid character '{' in IRI"),
    ("<http://ex.org/\\n>", "bad escape \\n in IRI"),
    ("<http://ex.org/\\u0020>", "space in IRI"),
    ('"abc', "unterminated literal"),
    ('"a\\qb"', "bad escape \\q"),
    ('"\\u12"', "bad escape \\u12"),
    ('"\\uD800"', "bad escape \\uD800 (not a character)"),
    ('"x"@', "bad language tag"),
    ('"x"^^xsd:integer', "datatype must be an IRI"),
    ("_:", "empty blank node label"),
    ("ex:a", "expected a term at 'ex:a'"),
    ('"x" junk', "unexpected text after term: 'junk'"),
    (f'"x"^^<{RDF_LANGSTRING}>', "rdf:langString literal without a language tag"),
])
def test_syntax_errors_have_short_reasons(text, reason):
    with pytest.raises(TermError) as info:
        parse_term(text)
    assert str(info.value) == reason


@pytest.mark.parametrize("datatype, good, bad", [
    ("integer", ["0", "-12", "+007", "123456789012345678901234567890"], ["1.x", "1.0", "", " 1", "one"]),
    ("int", ["2147483647", "-2147483648"], ["2147483648"]),
    ("long", ["9223372036854775807"], ["9223372036854775808"]),
    ("short", ["-32768"], ["32768"]),
    ("byte", ["127", "-128"], ["300", "-129"]),
    ("unsignedInt", ["0", "4294967295"], ["-1", "4294967296"]),
    ("unsignedByte", ["255"], ["256"]),
    ("nonNegativeInteger", ["0"], ["-1"]),
    ("positiveInteger", ["1"], ["0"]),
    ("negativeInteger", ["-1"], ["0"]),
    ("nonPositiveInteger", ["0", "-5"], ["1"]),
    ("decimal", ["1.5", "-.5", "3.", "+10"], ["1e3", "1.2.3", "."]),
    ("double", ["1.5e10", "-INF", "NaN", ".5E-3", "7"], ["abc", "1e", "nan", "e5"]),
    ("float", ["INF", "1.0"], ["1,0"]),
    ("boolean", ["true", "false", "1", "0"], ["True", "yes", "2"]),
    ("dateTime", ["2024-02-29T10:00:00Z", "2024-01-01T24:00:00", "-0044-03-15T12:00:00.5+01:00"],
     ["2023-02-29T10:00:00Z", "2024-01-01", "2024-01-01T10:00", "2024-04-31T00:00:00",
      "2024-01-01T10:00:00+15:00", "not a time"]),
    ("date", ["2024-12-31", "2024-12-31Z", "2000-02-29"], ["2024-13-01", "1900-02-29", "24-01-01"]),
    ("time", ["23:59:59", "00:00:00.123-05:00"], ["25:00:00", "12:60:00", "12:00"]),
    ("dateTimeStamp", ["2024-01-01T00:00:00Z"], ["2024-01-01T00:00:00"]),
])
def test_xsd_lexical_forms(datatype, good, bad):
    for lexical in good:
        assert parse_term(f'"{lexical}"^^<{XSD}{datatype}>').value == lexical
    for lexical in bad:
        with pytest.raises(TermError, match=f"invalid lexical form .* for xsd:{datatype}$"):
            parse_term(f'"{lexical}"^^<{XSD}{datatype}>')


def test_unknown_datatypes_are_accepted():
    assert parse_term('"anything"^^<http://ex.org/dt>').value == "anything"
    assert parse_term(f'"P1Y"^^<{XSD}duration>').value == "P1Y"


def test_prefixed_names_need_declarations():
    prefixes = {"ex": "http://ex.org/", "": "http://default.org/", "xsd": XSD}
    assert parse_term("ex:alice", prefixes).nt == "<http://ex.org/alice>"
    assert parse_term(":x", prefixes).nt == "<http://default.org/x>"
    assert parse_term('"5"^^xsd:int', prefixes).nt == f'"5"^^<{XSD}int>'
    with pytest.raises(TermError, match="undeclared prefix 'foaf:'"):
        parse_term("foaf:name", prefixes)


def test_read_term_stops_at_the_term_end():
    text = '<http://a/s> _:b.x "l"@en .'
    first, end = read_term(text, 0)
    assert first.nt == "<http://a/s>" and text[end] == " "
    second, end = read_term(text, end + 1)
    assert second.value == "b.x"
    third, end = read_term(text, end + 1)
    assert third.nt == '"l"@en' and text[end:] == " ."


def test_terms_validate_on_construction():
    with pytest.raises(TermError, match="relative IRI"):
        Term("iri", "no-scheme")
    with pytest.raises(TermError, match="invalid lexical form 'x' for xsd:boolean"):
        Term("literal", "x", f"{XSD}boolean")
    with pytest.raises(TermError, match="unknown term kind"):
        Term("variable", "x")


@pytest.mark.parametrize("nt, expected", [
    ("<http://ex.org/a>", {"type": "uri", "value": "http://ex.org/a"}),
    ("_:b7", {"type": "bnode", "value": "b7"}),
    ('"hi"', {"type": "literal", "value": "hi"}),
    ('"hi"@en', {"type": "literal", "value": "hi", "xml:lang": "en"}),
    (f'"1"^^{INT}', {"type": "literal", "value": "1", "datatype": f"{XSD}integer"}),
    ('"a\\nb"', {"type": "literal", "value": "a\nb"}),
])
def test_sparql_json(nt, expected):
    assert term_to_sparql_json(nt) == expected
