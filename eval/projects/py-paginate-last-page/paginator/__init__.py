"""Pagination and Link headers for list endpoints."""

from .links import link_header
from .pages import Page, PageOutOfRange, page_count, paginate

__all__ = ["Page", "PageOutOfRange", "link_header", "page_count", "paginate"]
