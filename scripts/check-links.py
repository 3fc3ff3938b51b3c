#!/usr/bin/env python3
"""Every link of the README and the book resolves: files, folders and #anchors.

    scripts/check-links.py [--html BOOK_DIR] FILE_OR_DIR...

Markdown files (FILE, or every .md under DIR): each relative link of the text (code
spans, fenced blocks and HTML comments left out) must name a file or folder of the repository, and its
#anchor a heading of the Markdown file it names (or, in the same file, of itself).
With --html, every relative href and src of the built book (mdbook build) must name a
file of the book and an id in it: this catches what only the built site shows, such as a
link that leaves the book's sources. Links to the web (http, https, mailto) are not
followed: CI is offline. Prints every broken link with its file and line; exit status 1
when there is one.
"""

import argparse
import html.parser
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")


def slug(heading):
    """The anchor of a heading, as mdBook and GitHub make it: lower case, spaces to
    hyphens, every character that is not a letter, digit, hyphen or underscore left out."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    parts = re.split(r"(`[^`]*`)", text)  # raw HTML tags dropped, code spans kept
    text = "".join(p.strip("`") if p.startswith("`") else re.sub(r"<[^>]+>", "", p) for p in parts)
    text = text.strip().lower()
    out = []
    for c in text:
        if c.isalnum() or c in "-_":
            out.append(c)
        elif c.isspace():
            out.append("-")
    return "".join(out)


def markdown_lines(path):
    """(line number, text, text with code spans blanked) of every line outside fenced
    code."""
    fenced = False
    comment = False  # inside <!-- … -->, which no reader sees
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not comment and FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            visible = ""
            while line:
                if comment:
                    end = line.find("-->")
                    comment = end < 0
                    line = "" if end < 0 else line[end + 3 :]
                else:
                    start = line.find("<!--")
                    visible += line if start < 0 else line[:start]
                    comment = start >= 0
                    line = "" if start < 0 else line[start + 4 :]
            yield number, visible, CODE_SPAN.sub(lambda m: " " * len(m.group(0)), visible)


_anchors = {}


def anchors(path):
    """The heading anchors of a Markdown file (duplicates numbered -1, -2, …)."""
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line, _ in markdown_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        with open(path, encoding="utf-8") as f:
            found.update(re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", f.read()))
        _anchors[path] = found
    return _anchors[path]


def check_markdown(path, errors):
    for number, _, line in markdown_lines(path):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        m = REFERENCE.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if target.startswith(EXTERNAL):
                continue
            where, _, fragment = target.partition("#")
            where = urllib.parse.unquote(where)
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            if not os.path.exists(resolved):
                errors.append(f"{path}:{number}: {target}: no such file or folder")
                continue
            if fragment and resolved.endswith(".md"):
                if fragment not in anchors(resolved):
                    errors.append(f"{path}:{number}: {target}: no heading #{fragment} in {resolved}")


class Html(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []  # (line, url)
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append((self.getpos()[0], value))


def check_html(book, errors):
    pages = {}
    for folder, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                parser = Html()
                with open(path, encoding="utf-8") as f:
                    parser.feed(f.read())
                pages[os.path.normpath(path)] = parser
    for path, page in sorted(pages.items()):
        if os.path.basename(path) == "404.html":
            continue  # mdBook's, with links relative to the site's root
        for line, url in page.links:
            if url.startswith(EXTERNAL) or url.startswith(("javascript:", "data:", "{{")):
                continue
            parts = urllib.parse.urlsplit(url)
            if parts.scheme or parts.netloc:
                continue
            target = urllib.parse.unquote(parts.path)
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if os.path.isdir(resolved):
                resolved = os.path.join(resolved, "index.html")
            rel = os.path.relpath(path, book)
            if not os.path.exists(resolved):
                errors.append(f"book {rel}:{line}: {url}: no such file in the built book")
            elif parts.fragment and resolved in pages and parts.fragment not in pages[resolved].ids:
                errors.append(f"book {rel}:{line}: {url}: no id #{parts.fragment} in the page")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="Markdown files, or folders of them")
    parser.add_argument("--html", metavar="BOOK_DIR", help="the built book to check too")
    args = parser.parse_args()
    errors = []
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            for folder, _, names in os.walk(p):
                files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
        else:
            files.append(p)
    for f in sorted(files):
        check_markdown(f, errors)
    if args.html:
        check_html(args.html, errors)
    for e in errors:
        print(e, file=sys.stderr)
    what = f"{len(files)} Markdown files" + (" and the built book" if args.html else "")
    if errors:
        print(f"links: {len(errors)} broken in {what}", file=sys.stderr)
        return 1
    print(f"links: every link of {what} resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
