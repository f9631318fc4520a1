#!/usr/bin/env python3
"""NCCL all-gather time for the messages of one tensor-parallel step (one
process per GPU through PyTorch, the same NCCL as the machine's):
  nccl-step-time.py [--embd 4096] [--layers 32] [--rows 1,512] [--vocab 128256]
A step of n rows gathers, per layer, twice kTensorSlices/N slices of
[n x embd] f32 partial products per rank, and once the logits."""
import argparse, os, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

SLICES = 4

def timed(fn, reps):
    for _ in range(3): fn()
    torch.cuda.synchronize(); dist.barrier()
    t = time.perf_counter()
    for _ in range(reps): fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps

def worker(rank, n, a):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n)
    for rows in map(int, a.rows.split(",")):
        send = torch.zeros(SLICES // n * rows * a.embd, device="cuda")
        recv = torch.empty(SLICES * rows * a.embd, device="cuda")
        share = (a.vocab + n - 1) // n
        lsend = torch.zeros(share, device="cuda"); lrecv = torch.empty(share * n, device="cuda")
        # As in a CUDA graph: the step's collectives back to back.
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(3): dist.all_gather_into_tensor(recv, send)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for _ in range(2 * a.layers): dist.all_gather_into_tensor(recv, send)
            dist.all_gather_into_tensor(lrecv, lsend)
        t = timed(g.replay, 20)
        if rank == 0:
            print(f"{n} GPUs, {rows} rows: {2 * a.layers} all-gathers of {send.numel() * 4 / 1024:.0f} KiB a rank"
                  f" + logits: {t * 1e3:.3f} ms a step ({t / (2 * a.layers + 1) * 1e6:.1f} us each)", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--embd", type=int, default=4096); ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--rows", default="1,64,512"); ap.add_argument("--vocab", type=int, default=128256)
    a = ap.parse_args()
    n = torch.cuda.device_count()
    mp.spawn(worker, args=(n, a), nprocs=n)
