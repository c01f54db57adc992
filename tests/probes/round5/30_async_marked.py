"""Probe: a marked line inside a coroutine run by asyncio.run, with an await on the same line."""
import asyncio
import torch


async def get():
    await asyncio.sleep(0)
    return torch.ones(2)


async def main():
    y = (await get()) * 3  # trace: y
    return y


print(asyncio.run(main()).tolist())
