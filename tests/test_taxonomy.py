"""Every failure class the product promises exists as an entry."""
import pytest
import yaml

from support import SHARED


def test_every_taxonomy_class_has_an_entry(kb):
    taxonomy = SHARED / "taxonomy.yaml"
    if not taxonomy.exists():
        pytest.skip("../shared/taxonomy.yaml is not beside this checkout")
    wanted = {c["id"] for c in yaml.safe_load(taxonomy.read_text())["classes"]}
    have = {e.id for e in kb.entries}
    assert not wanted - have, f"missing entries: {sorted(wanted - have)}"
