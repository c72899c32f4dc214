"""RFC 8288 `Link` headers for a page of results."""

from urllib.parse import urlencode

from .pages import Page


def _url(base: str, number: int, per_page: int) -> str:
    return f"{base}?{urlencode({'page': number, 'per_page': per_page})}"


def link_header(base: str, page: Page) -> str:
    links = [(_url(base, 1, page.per_page), "first")]
    if page.has_prev:
        links.append((_url(base, page.number - 1, page.per_page), "prev"))
    if page.has_next:
        links.append((_url(base, page.number + 1, page.per_page), "next"))
    links.append((_url(base, page.total_pages, page.per_page), "last"))
    return ", ".join(f'<{url}>; rel="{rel}"' for url, rel in links)
