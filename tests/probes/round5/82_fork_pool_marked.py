"""Probe: a fork Pool whose workers run a marked function; children run uncaptured, the parent's capture kept."""
import multiprocessing as mp
import torch


def work(i):
    z = torch.ones(1) * i  # trace: z
    return float(z)


if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(3)))
    z_main = torch.tensor(work(7))  # trace: z_main
