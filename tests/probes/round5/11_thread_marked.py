"""Probe: a marked line run in two threads at once."""
import threading
import torch

results = []


def work(i):
    y = torch.full((2,), float(i))  # trace: thread_y
    results.append(y.sum().item())


threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(results))
