"""Browsing and fuzzy-searching the knowledge base."""


def test_kb_index_lists_entries(client):
    html = client.get("/kb/").get_data(as_text=True)
    assert "Demo GPU out of memory" in html and 'role="search"' in html


def test_fuzzy_search_finds_oom_despite_typo(client):
    html = client.get("/kb/?q=cuda+out+of+memmory").get_data(as_text=True)
    first = html.index('<ul class="kblist">')
    assert "out of memory" in html[first:first + 400].lower()


def test_entry_page_and_404(client):
    html = client.get("/kb/demo-oom").get_data(as_text=True)
    assert "How to fix it" in html and "#SBATCH --partition=demo-gpu" in html
    assert client.get("/kb/no-such-entry").status_code == 404


def test_api_kb_search(client):
    data = client.get("/api/v1/kb?q=cuda%20out%20of%20memmory").get_json()
    assert "oom" in data["entries"][0]["id"]
    assert client.get("/api/v1/kb/demo-oom").get_json()["id"] == "demo-oom"
