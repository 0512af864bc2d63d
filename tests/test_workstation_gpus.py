"""Workstation, GeForce and PCIe data-centre GPU presets: every figure worked by hand from the numbers its
source string states (cores x boost clock x 2, tensor cores x clock x FLOP/clock, bus bits / 8 x data rate),
tensor and TF32 peaks dense (half the sparse datasheet figure; on GeForce cards fp32 accumulation at half the
fp16-accumulate rate), the board's PCIe generation and its memory size."""

import pytest

from perfmodel import presets
from perfmodel.memory import gpu_memory_bytes

GIB = 1024 ** 3

#: name: (CUDA cores, boost clock Hz, bus bits, data rate bit/s per pin, host, memory GiB)
BOARDS = {
    "gtx1080ti": (3584, 1.582e9, 352, 11e9, "pcie3", 11),
    "quadro-rtx6000": (4608, 1.77e9, 384, 14e9, "pcie3", 24),
    "quadro-rtx8000": (4608, 1.77e9, 384, 14e9, "pcie3", 48),
    "rtx3070": (5888, 1.725e9, 256, 14e9, "pcie4", 8),
    "rtx3080": (8704, 1.71e9, 320, 19e9, "pcie4", 10),
    "rtx3090": (10496, 1.695e9, 384, 19.5e9, "pcie4", 24),
    "rtx4090": (16384, 2.52e9, 384, 21e9, "pcie4", 24),
    "rtx-a4000": (6144, 1.56e9, 256, 14e9, "pcie4", 16),
    "rtx-a4500": (7168, 1.65e9, 320, 16e9, "pcie4", 20),
    "rtx-a5000": (8192, 1.695e9, 384, 16e9, "pcie4", 24),
    "rtx-a5500": (10240, 1.665e9, 384, 16e9, "pcie4", 24),
    "rtx-a6000": (10752, 1.8e9, 384, 16e9, "pcie4", 48),
    "a40": (10752, 1.74e9, 384, 14.5e9, "pcie4", 48),
    "rtx6000-ada": (18176, 2.505e9, 384, 20e9, "pcie4", 48),
    "a100-pcie": (6912, 1.41e9, 5120, 2.43e9, "pcie4", 40),
    "a100-80gb-pcie": (6912, 1.41e9, 5120, 3.024e9, "pcie4", 80),
    "h100-pcie": (14592, 1.755e9, 5120, 3.186e9, "pcie5", 80),
    "v100-32gb": (5120, 1.53e9, 4096, 1.752e9, "pcie3", 32),
}

#: name: (tensor cores, dense fp16 FLOP per clock per tensor core with fp16 accumulation, GeForce?)
#: Turing: 64 FMA = 128 FLOP; Ampere GA10x and Ada: 128 FMA = 256 FLOP; Volta: 64 FMA = 128 FLOP.
TENSOR = {
    "quadro-rtx6000": (576, 128, False),
    "quadro-rtx8000": (576, 128, False),
    "rtx3070": (184, 256, True),
    "rtx3080": (272, 256, True),
    "rtx3090": (328, 256, True),
    "rtx4090": (512, 256, True),
    "rtx-a4000": (192, 256, False),
    "rtx-a4500": (224, 256, False),
    "rtx-a5000": (256, 256, False),
    "rtx-a5500": (320, 256, False),
    "rtx-a6000": (336, 256, False),
    "a40": (336, 256, False),
    "rtx6000-ada": (568, 256, False),
    "v100-32gb": (640, 128, False),
}

#: datasheet tensor figures printed WITH sparsity: name -> (fp16/bf16 sparse, TF32 sparse or None)
SPARSE = {
    "rtx-a4000": (153.4e12, None),
    "rtx-a4500": (189.2e12, None),
    "rtx-a5000": (222.2e12, None),
    "rtx-a5500": (272.8e12, None),
    "rtx-a6000": (309.7e12, None),
    "a40": (299.4e12, 149.6e12),
    "rtx4090": (330.3e12, 165.2e12),  # fp32-accumulate column
    "a100-pcie": (624e12, 312e12),
    "a100-80gb-pcie": (624e12, 312e12),
    "h100-pcie": (1513e12, 756e12),
}


#: presets that keep the vendor's rounded figure (the v100 preset's 15.7 and 125 TFLOPS for 15.67 and 125.3)
ROUNDED = {"v100-32gb": 3e-3}


@pytest.fixture(scope="module")
def gpus():
    return presets.gpus()


def test_every_new_preset_exists_with_its_host_and_source(gpus):
    for name, (*_, host, _gib) in BOARDS.items():
        g = gpus[name]
        assert g.host == host, name
        assert g.source and g.memory_Bps and g.tensor_flops, name


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_fp32_peak_is_cores_times_boost_clock_times_two(gpus, name):
    cores, clock, *_ = BOARDS[name]
    assert gpus[name].peak_flops == pytest.approx(cores * clock * 2, rel=ROUNDED.get(name, 1e-3))
    # the source string states the figures the arithmetic uses
    src = gpus[name].source.replace(",", "")
    assert str(cores) in src and f"{clock / 1e6:.0f} MHz" in src, name


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_memory_bandwidth_is_bus_bits_over_eight_times_data_rate(gpus, name):
    _, _, bus, rate, *_ = BOARDS[name]
    # the V100's 900 GB/s is NVIDIA's rounding of 4096 / 8 x 1.752 Gb/s = 897 GB/s
    rel = 5e-3 if name == "v100-32gb" else 1e-3
    assert gpus[name].memory_Bps == pytest.approx(bus / 8 * rate, rel=rel)
    assert f"{bus}" in gpus[name].source.replace(",", ""), name


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_memory_size(name):
    gib = BOARDS[name][-1]
    assert gpu_memory_bytes(name)[0] == gib * GIB


@pytest.mark.parametrize("name", sorted(TENSOR))
def test_tensor_peaks_are_dense_and_geforce_accumulates_fp32_at_half_rate(gpus, name):
    cores, clock = BOARDS[name][0], BOARDS[name][1]
    tcs, flop, geforce = TENSOR[name]
    fp16_acc = tcs * flop * clock
    g = gpus[name]
    assert g.tensor_flops == pytest.approx(fp16_acc / 2 if geforce else fp16_acc, rel=ROUNDED.get(name, 2e-3))
    if flop == 256:  # Ampere GA10x / Ada: TF32 runs at half the fp32-accumulate rate
        assert g.tf32_flops == pytest.approx(g.tensor_flops / 2, rel=2e-3)
    else:  # Turing and Volta have no TF32
        assert g.tf32_flops is None
    if geforce:  # on GeForce Ampere/Ada the TF32 tensor peak is no faster than the fp32 CUDA-core peak
        assert g.tf32_flops == pytest.approx(cores * clock * 2, rel=2e-3)


@pytest.mark.parametrize("name", sorted(SPARSE))
def test_sparse_datasheet_figures_are_halved(gpus, name):
    fp16_sparse, tf32_sparse = SPARSE[name]
    g = gpus[name]
    assert g.tensor_flops == pytest.approx(fp16_sparse / 2, rel=2e-3)
    if tf32_sparse is not None:
        assert g.tf32_flops == pytest.approx(tf32_sparse / 2, rel=2e-3)


def test_variants_share_their_dies_peaks(gpus):
    peaks = lambda g: (g.peak_flops, g.tf32_flops, g.tensor_flops)  # noqa: E731
    assert peaks(gpus["v100-32gb"]) == peaks(gpus["v100"])
    assert gpus["v100-32gb"].memory_Bps == gpus["v100"].memory_Bps
    assert peaks(gpus["a100-pcie"]) == peaks(gpus["a100"]) == peaks(gpus["a100-80gb-pcie"])
    assert gpus["a100-pcie"].memory_Bps == gpus["a100"].memory_Bps
    assert peaks(gpus["quadro-rtx8000"]) == peaks(gpus["quadro-rtx6000"])
    assert gpu_memory_bytes("quadro-rtx8000")[0] == 2 * gpu_memory_bytes("quadro-rtx6000")[0]
    # the PCIe H100 is slower than the SXM5 part in every peak
    h, hp = gpus["h100"], gpus["h100-pcie"]
    assert all(a < b for a, b in zip(peaks(hp) + (hp.memory_Bps,), peaks(h) + (h.memory_Bps,)))


def test_pascal_has_no_tensor_cores(gpus):
    g = gpus["gtx1080ti"]
    assert g.tf32_flops is None and g.tensor_flops == g.peak_flops  # fp16 math at 1/64: mixed runs at fp32 rate
