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


def test_typo_search_in_the_bundled_kb_is_focused():
    """The review's query: cuda-oom first, and not a tail of unrelated entries (NCCL, asserts...)."""
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.web import kbview
    kb = load_knowledge_base()
    entries = kbview.all_entries(kb)
    ids = [d["id"] for _, d in kbview.search(entries, "cuda out of memmory")]
    assert ids[0] == "cuda-oom"
    # the out-of-memory family only (CUDA, HIP, host, JAX, TF): no tail of unrelated entries;
    # finer out-of-memory classes (refines: cuda-oom, e.g. vllm-sampler-warmup-oom, or
    # host-oom-killed, e.g. compiler-killed-out-of-memory) are on topic too
    finer = {e.id for e in kb.entries if e.refines in ("cuda-oom", "host-oom-killed")}
    assert len([i for i in ids if i not in finer]) <= 5, ids
    assert not any(i.startswith(("nccl", "device-side")) for i in ids), ids
    # a query that matches nothing well still finds nothing
    assert kbview.search(entries, "zzqx wobble") == []
