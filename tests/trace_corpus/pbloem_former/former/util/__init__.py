from .util import mask_, d, here, contains_nan, tic, toc, \
    slice_diag, compute_compression, LOG2E, estimate_compression, enwik8, sample_batch, sample_sequence, sample, \
    enwik8_string, enwik8_bytes
