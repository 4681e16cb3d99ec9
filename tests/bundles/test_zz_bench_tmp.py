import resource, time, tempfile, os
from pathlib import Path
import orjson, pytest
from bundles import protocol
from bundles.models import Chunk
from bundles.services import bundle_import, bundle_import_file, bundle_export, ExportRequest
from bundles.services.exports import bundle_export_stream
from memoryadmin.audit import Actor
from tests.bundles.helpers import embedding

N = 100_000

def big():
    emb = embedding([0.1] * 384)
    chunks = [{"id": i, "content": f"memory number {i} about things", "memory_type": "fact", "embedding": emb} for i in range(N)]
    edges = [{"chunk_a": i, "chunk_b": i + 1, "edge_type": "co", "weight": 0.5, "co_activation_count": 1} for i in range(0, N - 1, 2)]
    return protocol.build_bundle(manifest={"scope": "full", "embedding_model": "m", "embedding_dim": 384}, sections={"chunks": chunks, "memory_edges": edges, "entities": [{"name": f"e{i}"} for i in range(5000)]}, exported_at="2026-01-01T00:00:00Z")

@pytest.mark.django_db(transaction=True)
def test_bench(team, other_team):
    b = big()
    t = time.perf_counter(); r = bundle_import(team=team, actor=Actor.system(), bundle=b)
    print(f"\ndict import {N}: {time.perf_counter()-t:.2f}s", r["report"]["chunks"], r["report"]["memory_edges"])
    t = time.perf_counter(); r = bundle_import(team=team, actor=Actor.system(), bundle=b)
    print(f"dict re-import: {time.perf_counter()-t:.2f}s", r["report"]["chunks"])
    fd, name = tempfile.mkstemp(suffix=".json"); os.write(fd, orjson.dumps(b)); os.close(fd)
    print("file size MB", os.path.getsize(name) / 1e6)
    del b
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter(); r = bundle_import_file(team=other_team, actor=Actor.system(), path=Path(name))
    print(f"file import: {time.perf_counter()-t:.2f}s", r["report"]["chunks"], "maxrss MB", rss0/1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)
    os.unlink(name)
    t = time.perf_counter(); n = 0
    for line in bundle_export_stream(team=team, actor=Actor.system(), request=ExportRequest()):
        n += 1
    print(f"stream export: {time.perf_counter()-t:.2f}s lines {n}, maxrss MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)
    t = time.perf_counter(); bundle_export(team=team, actor=Actor.system(), request=ExportRequest())
    print(f"json export: {time.perf_counter()-t:.2f}s")
