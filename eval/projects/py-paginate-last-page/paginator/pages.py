"""Slicing a sequence into numbered pages (the first page is 1)."""

from dataclasses import dataclass
from typing import Sequence

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 200


class PageOutOfRange(LookupError):
    """The requested page does not exist."""


@dataclass(frozen=True)
class Page:
    items: list
    number: int
    per_page: int
    total_items: int
    total_pages: int

    @property
    def has_prev(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.total_pages


def page_count(total_items: int, per_page: int) -> int:
    """How many pages `total_items` fill; an empty listing still has one (empty) page."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return max(1, total_items // per_page)


def paginate(items: Sequence, page: int = 1, per_page: int = DEFAULT_PER_PAGE) -> Page:
    per_page = min(per_page, MAX_PER_PAGE)
    total_pages = page_count(len(items), per_page)
    if page < 1 or page > total_pages:
        raise PageOutOfRange(f"page {page} is out of range (1-{total_pages})")
    start = (page - 1) * per_page
    return Page(
        items=list(items[start:start + per_page]),
        number=page,
        per_page=per_page,
        total_items=len(items),
        total_pages=total_pages,
    )
