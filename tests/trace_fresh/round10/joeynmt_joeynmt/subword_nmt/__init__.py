"""A stand-in for subword_nmt (ours, not upstream; not installed here): imported by joeynmt/tokenizers.py for its BPE
tokenizer, which this forward pass on token IDs never builds."""
