"""Probe: if __name__ == "__main__", and a module that imports __main__ and reads its globals."""
import sys
import torch


def main():
    y = torch.ones(2)  # trace: y
    print(__name__, sys.modules["__main__"].__name__, hasattr(sys.modules["__main__"], "main"))


if __name__ == "__main__":
    main()
