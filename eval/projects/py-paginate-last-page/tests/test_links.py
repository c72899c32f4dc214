from paginator import link_header, paginate


def test_links_on_first_page():
    header = link_header("/api/users", paginate(list(range(20)), page=1, per_page=10))
    assert header == (
        '</api/users?page=1&per_page=10>; rel="first", '
        '</api/users?page=2&per_page=10>; rel="next", '
        '</api/users?page=2&per_page=10>; rel="last"'
    )


def test_links_on_last_page():
    header = link_header("/api/users", paginate(list(range(20)), page=2, per_page=10))
    assert 'rel="prev"' in header
    assert 'rel="next"' not in header
