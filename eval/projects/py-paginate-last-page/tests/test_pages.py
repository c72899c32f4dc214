import pytest

from paginator import PageOutOfRange, page_count, paginate


def test_page_count_exact_multiple():
    assert page_count(40, 10) == 4


def test_empty_listing_has_one_empty_page():
    page = paginate([], page=1, per_page=10)
    assert page.items == []
    assert page.total_pages == 1
    assert not page.has_next and not page.has_prev


def test_middle_page():
    page = paginate(list(range(30)), page=2, per_page=10)
    assert page.items == list(range(10, 20))
    assert page.has_prev and page.has_next


def test_last_full_page_has_no_next():
    page = paginate(list(range(30)), page=3, per_page=10)
    assert page.items == list(range(20, 30))
    assert not page.has_next


def test_page_zero_is_out_of_range():
    with pytest.raises(PageOutOfRange):
        paginate(list(range(5)), page=0, per_page=10)


def test_per_page_is_capped():
    page = paginate(list(range(1000)), page=1, per_page=5000)
    assert page.per_page == 200
    assert len(page.items) == 200


def test_per_page_must_be_positive():
    with pytest.raises(ValueError):
        page_count(10, 0)
