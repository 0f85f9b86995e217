"""MkDocs hooks: the repository's Markdown outside docs/ joins the site, and its links work.

The README, suites/README.md, CONTRIBUTING.md and CHANGELOG.md stay where GitHub shows them
(and where tests and the package point). The site takes them in as pages, and a link written
as a path in the repository (`docs/proxy.md#...` in the README, `../suites/README.md` in a
docs page) is pointed at the page its target became, so one link works in both places.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parent.parent
# A file outside docs/ -> the page it is in the site.
OUTSIDE = {
    "README.md": "index.md",
    "suites/README.md": "suites.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
}
_PAGES = {page: source for source, page in OUTSIDE.items()}
# A relative Markdown link: `](path)` or `](path#anchor)`, not a URL or an anchor alone.
_LINK = re.compile(r"\]\((?![a-z]+:|#)([^)#\s]+)(#[^)\s]*)?\)")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for source, page in OUTSIDE.items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / source)))
    return files


def _site_page(repo_path: str) -> str | None:
    """The site page a repository file became, or None for a file the site lacks."""
    if repo_path in OUTSIDE:
        return OUTSIDE[repo_path]
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    return None


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    uri = page.file.src_uri
    source = _PAGES.get(uri, f"docs/{uri}")

    def rewrite(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), match[1]))
        site_page = _site_page(target)
        if site_page is None:
            return match[0]
        link = posixpath.relpath(site_page, posixpath.dirname(uri) or ".")
        return f"]({link}{match[2] or ''})"

    return _LINK.sub(rewrite, markdown)
