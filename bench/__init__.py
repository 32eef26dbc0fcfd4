"""Side-by-side benchmarks: ``python -m bench`` (see ``bench/README`` section of the
project README). Never imported by the library; figures are printed and written to
``bench/results/``, never asserted."""
