"""Running out of memory is one line naming what to lower."""

import pytest
import torch

from zoo.training.memory import OutOfMemory, memory_refusal


def test_the_cpu_allocators_refusal_becomes_one_line_naming_the_batch_budget():
    with pytest.raises(OutOfMemory, match=r"out of memory on the cpu while training .* data.max_tokens \(now 1,024"):
        with memory_refusal("training", 1024, "cpu"):
            torch.empty(2**60, dtype=torch.uint8)  # an exabyte: the allocator refuses at once


def test_other_errors_pass_through():
    with pytest.raises(RuntimeError, match="shapes"), memory_refusal("training", 1024, "cpu"):
        raise RuntimeError("shapes cannot be multiplied")
