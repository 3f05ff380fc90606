"""Which machine a measurement belongs to: CPU model or GPU name, torch version, threads."""

from __future__ import annotations

import hashlib
import os
import platform
from dataclasses import asdict, dataclass

from narcli.errors import UsageError

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # cpu | cuda
    name: str  # "AMD EPYC 7B13" / "NVIDIA H100 80GB HBM3"
    torch: str
    threads: int
    machine: str = ""  # digest of `machine_fingerprint()`: two VMs both called "AMD EPYC" differ 2-3x

    @property
    def key(self) -> str:
        text = f"{self.kind}|{self.name}|{self.torch}|{self.threads}" + (f"|{self.machine}" if self.machine else "")
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def to_dict(self) -> dict:
        return asdict(self) | {"key": self.key}

    def describe(self) -> str:
        threads = f", {self.threads} thread{'s' * (self.threads != 1)}" if self.kind == "cpu" else ""
        return f"{self.name} ({self.kind}{threads}, torch {self.torch})"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def machine_fingerprint() -> dict[str, object]:
    """What tells one CPU machine from another beyond its model name: core count, cache size, the
    instruction-set flags (AVX-512, AMX…), memory and kernel. Read from /proc where it is there."""
    info: dict[str, object] = {"name": cpu_name(), "cores": os.cpu_count() or 1, "machine": platform.machine(),
                               "system": platform.system()}
    try:
        with open("/proc/cpuinfo") as handle:
            text = handle.read(1 << 16)
        fields = dict(line.split(":", 1) for line in text.split("\n\n", 1)[0].splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        info["cache"] = fields.get("cache size", "")
        flags = sorted(fields.get("flags", "").split())
        info["flags"] = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12] if flags else ""
        info["vector"] = " ".join(f for f in flags if f.startswith(("avx512f", "avx2", "amx", "avx_vnni", "fma")))
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as handle:
            info["memory_gib"] = round(int(handle.readline().split()[1]) / 2**20)
    except (OSError, ValueError, IndexError):
        pass
    return info


def machine_digest() -> str:
    text = "|".join(f"{k}={v}" for k, v in sorted(machine_fingerprint().items()) if k not in ("name", "system"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def check_device(kind: str) -> None:
    """UsageError unless `kind` is cpu, or cuda with a CUDA device present."""
    if kind not in DEVICES:
        raise UsageError(f"--device must be cpu or cuda, not {kind!r}")
    if kind == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available here; use --device cpu")


def torch_version() -> str:
    """torch's version without importing it (the child that measures does; this process need not)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "none"


def device_info(kind: str, threads: int | None) -> DeviceInfo:
    check_device(kind)
    cores = os.cpu_count() or 1
    if threads is not None and not 1 <= threads <= cores:  # more threads than cores is no other device
        raise UsageError(f"--threads must be between 1 and {cores} (the CPU cores of this machine), not {threads}")
    if kind == "cuda":
        import torch

        return DeviceInfo("cuda", torch.cuda.get_device_name(0), torch.__version__, 0)
    return DeviceInfo("cpu", cpu_name(), torch_version(), threads or len(os.sched_getaffinity(0)), machine_digest())


def available_bytes(kind: str) -> int:
    """Memory a model may use: MemAvailable on the CPU, free memory on the GPU."""
    if kind == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info()
        return int(free)
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
