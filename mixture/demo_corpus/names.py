"""File names inside a written demo corpus."""

MANIFEST = "MANIFEST.json"
GROUND_TRUTH = "ground_truth.json"
BENCHMARK = "benchmarks/demo-bench.jsonl"
