import pytest

from paginator import PageOutOfRange, link_header, page_count, paginate


def test_page_count_rounds_up():
    assert page_count(25, 10) == 3
    assert page_count(1, 10) == 1
    assert page_count(11, 10) == 2


def test_last_partial_page_is_reachable():
    page = paginate(list(range(25)), page=3, per_page=10)
    assert page.items == [20, 21, 22, 23, 24]
    assert page.total_pages == 3
    assert not page.has_next


def test_page_before_partial_page_has_next():
    assert paginate(list(range(25)), page=2, per_page=10).has_next


def test_fewer_items_than_a_page():
    page = paginate(list(range(7)), page=1, per_page=10)
    assert page.items == list(range(7))
    assert page.total_pages == 1


def test_last_link_points_at_partial_page():
    header = link_header("/api/users", paginate(list(range(25)), page=1, per_page=10))
    assert '</api/users?page=3&per_page=10>; rel="last"' in header


def test_page_past_the_end_is_still_out_of_range():
    with pytest.raises(PageOutOfRange):
        paginate(list(range(25)), page=4, per_page=10)
