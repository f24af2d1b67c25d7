"""Spreading jobs over SMs (spec kdt-semantics.md §4, "Kernel cycles")."""
import heapq


def assign_jobs(job_cycles: list, num_sms: int) -> tuple:
    """Greedy assignment: each job, in id order, goes to the SM with the smallest running total (lowest
    index on ties). Returns ``(kernel_cycles, [(sm, start_cycle) per job])``."""
    heap = [(0, sm) for sm in range(num_sms)]
    placement = []
    for cycles in job_cycles:
        total, sm = heapq.heappop(heap)
        placement.append((sm, total))
        heapq.heappush(heap, (total + cycles, sm))
    return max(total for total, _ in heap), placement
