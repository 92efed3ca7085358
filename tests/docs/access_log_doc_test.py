#!/usr/bin/python3
"""docs/access-log.md against the writer: every field proxy/access_log/access_log.cc writes has
a row in the page's field table (in the order written), every row is a field it writes, and the
field list in config/examples/ferry.yaml's access_log comment names each field. The fields
filters write through the stream info map are declared in filters/ (access_log::InfoField::...)
and written where render() calls renderInfo().

Usage: access_log_doc_test.py [REPO]"""
import glob
import os
import re
import sys

import doclib

SOURCE = "proxy/access_log/access_log.cc"
DOC = "docs/access-log.md"
EXAMPLE = "config/examples/ferry.yaml"


def filter_fields(repo):
    """The fields filters declare (InfoField::withDefault/optional/nullable("name", ...)), per
    file in path order, in the order declared."""
    fields = []
    for path in sorted(glob.glob(os.path.join(repo, "filters", "**", "*.cc"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fields += re.findall(r"InfoField::(?:withDefault|optional|nullable)\(\s*\"([a-z_]+)\"",
                             text)
    return fields


def written_fields(src, info_fields):
    """The keys render() writes: f.string("name", ...), f.number(...), f.integer(...),
    f.null(...), in order of first appearance, with the filters' fields where render() calls
    renderInfo()."""
    body = src[src.index("std::string render("):]
    fields = []
    for m in re.finditer(r"\bf\.(?:string|number|integer|null)\(\s*\"([a-z_]+)\"|renderInfo\(",
                         body):
        names = [m.group(1)] if m.group(1) else info_fields
        for name in names:
            if name not in fields:
                fields.append(name)
    return fields


def example_comment_fields(text):
    """The words of the `# Fields: ...` comment under access_log in the example."""
    m = re.search(r"^\s*# Fields:(.*?)(?=^\S|^\s*[a-z_]+:|\Z)", text, re.M | re.S)
    if not m:
        doclib.fail([f"{EXAMPLE}: no '# Fields:' comment under access_log"])
    return set(re.findall(r"[a-z_]+", m.group(1)))


def main():
    repo = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else doclib.REPO
    doclib.REPO = repo
    fields = written_fields(doclib.read(SOURCE), filter_fields(repo))
    doclib.require(f"fields written by {SOURCE}", fields, 15)
    doc = doclib.read(DOC)
    table = doc[doc.index("## Fields"):] if "## Fields" in doc else ""
    rows = doclib.table_first_cells(table)
    doclib.require(f"field rows under '## Fields' in {DOC}", rows, 15)

    problems = []
    for f in fields:
        if f not in rows:
            problems.append(f"{SOURCE} writes the field {f}, which has no row in {DOC}")
    for r in rows:
        if r not in fields:
            problems.append(f"{DOC} lists the field {r}, which {SOURCE} does not write")
    if not problems and rows != fields:
        problems.append(f"{DOC} lists the fields in another order than they are written: "
                        f"{', '.join(fields)}")
    words = example_comment_fields(doclib.read(EXAMPLE))
    for f in fields:
        if f not in words:
            problems.append(f"{EXAMPLE}: the access_log '# Fields:' comment does not name {f}")
    if problems:
        doclib.fail(problems)
    print(f"ok: {len(fields)} access-log fields in {DOC} and {EXAMPLE}")


if __name__ == "__main__":
    main()
