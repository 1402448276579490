"""Benchmark decontamination: which word n-grams of a benchmark carry content (`tokens`), the benchmark records and
their checks (`records`), and the index of their n-grams with its report and the drop detail (`index`)."""
