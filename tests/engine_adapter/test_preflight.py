"""engine_adapter.preflight: every check on readings recorded on real Macs (and Linux), fed through the reader seam.

Each macOS scenario of issue 38 is a healthy M1 Max with one thing wrong; its negative control is the same check on
the healthy reading, which passes. Where each recorded output came from is said beside it; a reading that is not a
verbatim capture says so ("composed") and what it was composed from.
"""

from __future__ import annotations

import pytest

from specscope.engine_adapter import preflight as pf
from specscope.engine_adapter import preflight_mac as pfm
from specscope.engine_adapter.preflight_parts import parts_from_checkpoints, parts_from_engine
from specscope.engine_adapter.machine_reader import RecordedReader, SystemReader, command_key
from specscope.engine_adapter.model.demo_model import default_demo_path

GIB = 2**30

# -- MLX device info --------------------------------------------------------------------------------------------
# Apple M3 Max, 128 GB, MLX 0.30.4: verbatim from github.com/ml-explore/mlx-c/pull/93 (its example tool's output).
INFO_M3_MAX = {"device_name": "Apple M3 Max", "max_recommended_working_set_size": 103079215104,
               "memory_size": 137438953472, "architecture": "applegpu_g15s", "max_buffer_length": 77309411328,
               "resource_limit": 499000}
# Apple M1, 16 GB, macOS 13.7.8, mlx 0.29.3 `mx.metal.device_info()`: verbatim from a public repository's benchmark
# notes ("MLX device info, verbatim"), found through the code index.
INFO_M1 = {"resource_limit": 499000, "max_buffer_length": 8589934592, "architecture": "applegpu_g13g",
           "memory_size": 17179869184, "max_recommended_working_set_size": 11453251584, "device_name": "Apple M1"}
# Apple M2 Ultra (192 GB), from the PR that added mx.metal.device_info (github.com/ml-explore/mlx/pull/1060): the
# first version had no device_name and no memory_size, so the chip cannot be named from it.
INFO_M2_ULTRA_OLD = {"max_recommended_working_set_size": 188743680000, "max_buffer_length": 115964116992,
                     "architecture": "applegpu_g14d"}
# Composed: no M1 Max capture was found. The keys are INFO_M1's; device_name as MLX names it; the architecture's GPU
# family (13: M1) is the only part of it read (the letter after it is not); 64 GB with the working set at 75% of it
# (INFO_M3_MAX's ratio).
INFO_M1_MAX = {"resource_limit": 499000, "max_buffer_length": 34359738368, "architecture": "applegpu_g13c",
               "memory_size": 68719476736, "max_recommended_working_set_size": 51539607552, "device_name": "Apple M1 Max"}
# Composed, as INFO_M1_MAX is: no M2 or M4 capture was found. INFO_M1's keys and sizes; device_name as MLX names it;
# the architecture's generation is the one part read (14: M2; 16: M4, as the verbatim M4 ioreg capture below names its
# accelerator AGXAcceleratorG16G); the variant letter is a guess and is not read.
INFO_M2 = {**INFO_M1, "device_name": "Apple M2", "architecture": "applegpu_g14g"}
INFO_M4 = {**INFO_M1, "device_name": "Apple M4", "architecture": "applegpu_g16g"}
# Linux CPU build (MLX 0.30.4): verbatim from github.com/ml-explore/mlx-c/pull/93.
INFO_LINUX = {"architecture": "x86_64", "device_name": "Intel(R) Xeon(R) Silver 4410T"}

# -- pmset -g -----------------------------------------------------------------------------------------------------
# Verbatim (an arm64 Mac on Monterey) from github.com/AppHouseKitchen/AlDente-Battery_Care_and_Monitoring/issues/603
# (the ** around the lowpowermode line there is the poster's Markdown bold, left out).
PMSET_LPM_OFF = """
System-wide power settings:
 SleepDisabled\t\t1
Currently in use:
 standby              1
 Sleep On Power Button 1
 hibernatefile        /var/vm/sleepimage
 powernap             1
 networkoversleep     0
 disksleep            10
 sleep                1 (sleep prevented by bluetoothd, com.bombich.ccchelper, com.bombich.ccchelper, powerd, sharingd, com.apphousekitchen.aldente-pro)
 hibernatemode        3
 ttyskeepawake        1
 displaysleep         10 (display sleep prevented by com.apphousekitchen.aldente-pro)
 tcpkeepalive         1
 lowpowermode         0
 womp                 1
"""
# The line `pmset -g | grep lowpowermode` printed with Low Power Mode on: verbatim from a public repository's
# measurement notes ("macOS Low Power Mode was ON for every device timing row"), found through the code index; set
# in the same output as above.
PMSET_LPM_ON = PMSET_LPM_OFF.replace(" lowpowermode         0", " lowpowermode         1")
# Newer macOS prints `powermode` instead (0 automatic, 1 Low Power, 2 High Power): github.com/jacklandrin/OnlySwitch/
# issues/168 (macOS 14.7.5) and github.com/alfredapp/low-power-mode-workflow/issues/4 (M2 Max). Composed from them.
PMSET_POWERMODE_LOW = PMSET_LPM_OFF.replace(" lowpowermode         0", " powermode            1")

# -- thermal ------------------------------------------------------------------------------------------------------
# Apple silicon (M1 Pro, macOS 12.1): verbatim from github.com/exelban/stats/issues/749. It always says this there,
# throttled or not (github.com/matryer/xbar-plugins/pull/2189 says the same): no evidence either way.
THERM_APPLE_SILICON = """Note: No thermal warning level has been recorded
Note: No performance warning level has been recorded
Note: No CPU power status has been recorded
"""
# An Intel Mac throttling: verbatim from github.com/yujitach/MenuMeters/issues/158 (from `pmset -g thermlog`, whose
# records carry the same `key = value` lines `pmset -g therm` prints).
THERM_INTEL_THROTTLED = """2020-06-26 12:30:37 +0200 CPU Power notify
\tCPU_Scheduler_Limit \t= 40
\tCPU_Available_CPUs \t= 8
\tCPU_Speed_Limit \t= 28
"""
# `notifyutil -g com.apple.system.thermalpressurelevel` prints the name and the level; composed from public code that
# reads the level as the last word of that output (found through the code index) and the levels a public header
# names (0 Nominal, 1 Moderate, 2 Heavy, 3 Trapping, 4 Sleeping; Heavy is ProcessInfo's "serious").
def pressure(level: int) -> str:
    return f"com.apple.system.thermalpressurelevel {level}\n"


# -- swap, wired limit --------------------------------------------------------------------------------------------
# Verbatim from a public repository's test of "real macOS output", found through the code index.
SWAP_HEAVY = "vm.swapusage: total = 7168.00M  used = 6119.06M  free = 1048.94M  (encrypted)\n"
# Verbatim from a public macOS diagnostic report (8 GB Mac), found through the code index.
SWAP_LIGHT = "vm.swapusage: total = 1024.00M  used = 407.50M  free = 616.50M  (encrypted)\n"
SWAP_NONE = "vm.swapusage: total = 0.00M  used = 0.00M  free = 0.00M  (encrypted)\n"
# Verbatim from public setup notes (Mac14,12, macOS 26.5.1): 0 is the system default.
WIRED_DEFAULT = "iogpu.wired_limit_mb: 0\n"
# Verbatim from public setup notes (a status check of 2026-08-07), found through the code index.
WIRED_RAISED = "iogpu.wired_limit_mb: 118000\n"

# -- ioreg -r -d 1 -w 0 -c IOAccelerator -----------------------------------------------------------------------
# The accelerator entry's PerformanceStatistics, model and gpu-core-count: an Apple M4 at 30% "Device Utilization",
# verbatim from a public repository's test ("real ioreg output"), found through the code index.
IOREG_M4_BUSY = """+-o AGXAcceleratorG16G  <class AGXAcceleratorG16G, id 0x1000003a1, registered, matched, active, busy 0 (1 ms), retain 14>
    {
      "IOMatchedAtBoot" = Yes
      "PerformanceStatistics" = {"In use system memory (driver)"=0,"Alloc system memory"=2181693440,"Tiler Utilization %"=30,"recoveryCount"=0,"Renderer Utilization %"=29,"Device Utilization %"=30,"In use system memory"=356089856}
      "model" = "Apple M4"
      "gpu-core-count" = 10
    }
"""


def ioreg_m1_max(busy: int) -> str:
    """Composed: IOREG_M4_BUSY's entry with an M1 Max's name and 32 cores (G13X, 32 cores: the M1 Max in
    github.com/crystalidea/macs-fan-control/issues/550) and the utilisation set to ``busy``."""
    return (IOREG_M4_BUSY.replace("AGXAcceleratorG16G", "AGXAcceleratorG13X").replace('"Apple M4"', '"Apple M1 Max"')
            .replace('"gpu-core-count" = 10', '"gpu-core-count" = 32')
            .replace('"Device Utilization %"=30', f'"Device Utilization %"={busy}')
            .replace('"Tiler Utilization %"=30', f'"Tiler Utilization %"={busy}')
            .replace('"Renderer Utilization %"=29', f'"Renderer Utilization %"={busy}'))


# "macmon-lib": composed (the `mac` extra installed, at pyproject's floor); the rest as recorded with INFO_M3_MAX's MLX
MAC_VERSIONS = {"mlx": "0.30.4", "mlx-lm": "0.32.2", "macmon-lib": "0.7.0", "python": "3.11.16", "os": "Darwin 24.1.0"}


def mac(info=INFO_M1_MAX, **outputs) -> RecordedReader:
    """A healthy Mac (every reading the healthy one above), with ``outputs`` replacing some (by check: pmset, therm,
    pressure, swap, wired, ioreg)."""
    base = {pfm.PMSET: PMSET_LPM_OFF, pfm.PMSET_THERM: THERM_APPLE_SILICON, pfm.THERMAL_PRESSURE: pressure(0),
            pfm.SWAP: SWAP_NONE, pfm.WIRED_LIMIT: WIRED_DEFAULT, pfm.IOREG_ACCELERATOR: ioreg_m1_max(0),
            pfm.MACOS_VERSION: "15.1\n"}
    names = {"pmset": pfm.PMSET, "therm": pfm.PMSET_THERM, "pressure": pfm.THERMAL_PRESSURE, "swap": pfm.SWAP,
             "wired": pfm.WIRED_LIMIT, "ioreg": pfm.IOREG_ACCELERATOR}
    for k, v in outputs.items():
        base[names[k]] = v
    return RecordedReader("Darwin", {command_key(c): v for c, v in base.items()}, device_info=info,
                          mlx_device="Device(gpu, 0)", versions=MAC_VERSIONS)


def run(reader, parts=None, model_bytes=None) -> dict:
    return pf.evaluate(pf.take_readings(reader), parts, model_bytes)


def by_name(report: dict) -> dict:
    return {c["name"]: c for c in report["checks"]}


BF16_MTP = [{"part": "target", "dtype": "bfloat16", "path": "/models/Qwen3.5-35B-A3B-bf16", "how": "as loaded"},
            {"part": "MTP head", "dtype": "bfloat16", "path": "/models/Qwen3.5-35B-A3B-bf16",
             "how": "cast to the target's dtype when the head loads"}]
FP16 = [{**p, "dtype": "float16"} for p in BF16_MTP]


# -- the healthy Mac: the negative control for every scenario ---------------------------------------------------

def test_healthy_m1_max_passes_everything():
    rep = run(mac(), FP16, 20 * GIB)
    assert rep["status"] == "pass", pf.format_report(rep)
    assert all(c["status"] == "pass" for c in rep["checks"]), pf.format_report(rep)
    chip = by_name(rep)["chip and GPU"]["evidence"]
    assert "Apple M1 Max" in chip and "32-core GPU" in chip and "409.6 GB/s" in chip and "M1 generation" in chip
    assert "macOS 15.1" in by_name(rep)["versions and device"]["evidence"]


# -- issue 38's scenarios: each warns or fails with its fix -----------------------------------------------------

def test_bf16_mtp_head_as_loaded_on_m1_max_warns_with_the_fix_for_each_part():
    c = by_name(run(mac(), BF16_MTP, 20 * GIB))["bfloat16 on this GPU"]
    assert c["status"] == "warn"
    assert "no native bfloat16" in c["evidence"] and "MTP head bfloat16 (cast to the target's dtype" in c["evidence"]
    assert "mlx_lm.convert --hf-path /models/Qwen3.5-35B-A3B-bf16" in c["fix"] and "--dtype float16" in c["fix"]
    assert "drops the mtp.* tensors" in c["fix"] and "--mtp-weights /models/Qwen3.5-35B-A3B-bf16" in c["fix"]
    # controls: the same parts on a GPU with native bfloat16 (M3 Max), float16 parts on the M1 Max
    assert by_name(run(mac(INFO_M3_MAX), BF16_MTP, 20 * GIB))["bfloat16 on this GPU"]["status"] == "pass"
    assert by_name(run(mac(), FP16, 20 * GIB))["bfloat16 on this GPU"]["status"] == "pass"


def test_parts_whose_dtype_cannot_be_read_are_not_checked():
    parts = [{**FP16[0], "dtype": None}]
    assert by_name(run(mac(), parts, 2 * GIB))["bfloat16 on this GPU"]["status"] == "not checked"


def test_a_bf16_draft_model_gets_the_draft_models_fix():
    parts = [FP16[0], {"part": "draft model", "dtype": "bfloat16", "path": "/models/draft", "how": "as loaded"}]
    c = by_name(run(mac(INFO_M1), parts, 2 * GIB))["bfloat16 on this GPU"]
    assert c["status"] == "warn" and "--draft-model /models/draft-fp16" in c["fix"] and "target:" not in c["fix"]


def test_the_shipped_demo_runs_its_bf16_mtp_file_in_float32_so_it_passes_on_m1():
    parts, nbytes = parts_from_checkpoints(str(default_demo_path("hybrid")))
    assert [(p["part"], p["dtype"]) for p in parts] == [("target", "float32"), ("MTP head", "float32")]
    assert nbytes and nbytes > 0
    assert by_name(run(mac(INFO_M1), parts, nbytes))["bfloat16 on this GPU"]["status"] == "pass"


def test_a_model_over_the_working_set_fails_and_near_it_warns():
    over = by_name(run(mac(), FP16, 60 * GIB))["model vs GPU working set"]
    assert over["status"] == "fail" and "48.0 GiB" in over["evidence"] and "measures paging" in over["evidence"]
    assert "sudo sysctl iogpu.wired_limit_mb=" in over["fix"] and "can hang the machine" in over["fix"]
    assert "your choice" in over["fix"]
    assert by_name(run(mac(), FP16, 44 * GIB))["model vs GPU working set"]["status"] == "warn"
    assert by_name(run(mac(), FP16, 20 * GIB))["model vs GPU working set"]["status"] == "pass"


def test_a_model_over_the_working_set_stops_the_report():
    rep = run(mac(), FP16, 60 * GIB)
    assert rep["status"] == "fail" and pf.failed(rep)[0]["name"] == "model vs GPU working set"
    assert "--ignore-preflight" in pf.refusal(rep)


def test_low_power_mode_on_fails_in_either_spelling():
    for out in (PMSET_LPM_ON, PMSET_POWERMODE_LOW):
        c = by_name(run(mac(pmset=out)))["Low Power Mode"]
        assert c["status"] == "fail" and "Low Power Mode: Never" in c["fix"]
    assert by_name(run(mac(pmset=PMSET_LPM_OFF)))["Low Power Mode"]["status"] == "pass"
    high = by_name(run(mac(pmset=PMSET_LPM_OFF.replace(" lowpowermode         0", " powermode            2"))))
    assert high["Low Power Mode"]["status"] == "pass" and "High Power" in high["Low Power Mode"]["evidence"]


def test_thermal_serious_fails_moderate_warns_nominal_passes():
    serious = by_name(run(mac(pressure=pressure(2))))["thermal state"]
    assert serious["status"] == "fail" and "serious" in serious["evidence"] and "cool down" in serious["fix"]
    assert by_name(run(mac(pressure=pressure(1))))["thermal state"]["status"] == "warn"
    assert by_name(run(mac(pressure=pressure(0))))["thermal state"]["status"] == "pass"


def test_thermal_on_an_intel_mac_reads_the_speed_limit():
    c = by_name(run(mac(pressure=None, therm=THERM_INTEL_THROTTLED)))["thermal state"]
    assert c["status"] == "fail" and "CPU_Speed_Limit = 28" in c["evidence"]
    calm = THERM_INTEL_THROTTLED.replace("= 40", "= 100").replace("= 28", "= 100")
    assert by_name(run(mac(pressure=None, therm=calm)))["thermal state"]["status"] == "pass"


def test_the_gpu_busy_while_specscope_is_idle_warns_then_fails():
    c = by_name(run(mac(ioreg=ioreg_m1_max(30))))["GPU busy before the run"]
    assert c["status"] == "warn" and "30% busy" in c["evidence"] and "Activity Monitor" in c["fix"]
    assert by_name(run(mac(ioreg=ioreg_m1_max(85))))["GPU busy before the run"]["status"] == "fail"
    assert by_name(run(mac(ioreg=ioreg_m1_max(0))))["GPU busy before the run"]["status"] == "pass"
    m4 = by_name(run(mac(ioreg=IOREG_M4_BUSY)))["GPU busy before the run"]  # the verbatim capture
    assert m4["status"] == "warn"


def test_swap_in_use_warns():
    c = by_name(run(mac(swap=SWAP_HEAVY)))["swap in use"]
    assert c["status"] == "warn" and "6119 MB used of 7168 MB" in c["evidence"]
    assert by_name(run(mac(swap=SWAP_LIGHT)))["swap in use"]["status"] == "pass"
    assert by_name(run(mac(swap=SWAP_NONE)))["swap in use"]["status"] == "pass"


def test_wired_limit_below_the_model_warns():
    assert by_name(run(mac(wired=WIRED_DEFAULT), FP16, 20 * GIB))["GPU wired limit"]["status"] == "pass"
    low = by_name(run(mac(wired="iogpu.wired_limit_mb: 8192\n"), FP16, 20 * GIB))["GPU wired limit"]
    assert low["status"] == "warn" and "sudo sysctl iogpu.wired_limit_mb=" in low["fix"]
    assert by_name(run(mac(wired=WIRED_RAISED), FP16, 60 * GIB))["GPU wired limit"]["status"] == "pass"


# -- a probe that cannot run says "not checked", never "pass" -----------------------------------------------------

def test_every_mac_probe_that_cannot_run_is_not_checked():
    r = RecordedReader("Darwin", {}, device_info={}, mlx_device="Device(gpu, 0)", versions=MAC_VERSIONS)
    rep = run(r, FP16, 20 * GIB)
    st = {c["name"]: c["status"] for c in rep["checks"]}
    assert st == {"chip and GPU": "not checked", "bfloat16 on this GPU": "not checked",
                  "model vs GPU working set": "not checked", "GPU wired limit": "not checked",
                  "Low Power Mode": "not checked", "thermal state": "not checked", "swap in use": "not checked",
                  "GPU busy before the run": "not checked", "versions and device": "pass",
                  "wide verify on this chip": "not checked", "energy readings": "not checked"}
    assert rep["status"] == "pass" and rep["counts"]["not checked"] == 10
    # system_profiler was asked for the GPU cores only because ioreg did not say
    assert command_key(pfm.SYSTEM_PROFILER_DISPLAYS) in r.asked


def test_garbage_and_apple_silicon_therm_notes_are_not_checked():
    rep = by_name(run(mac(pmset="unexpected\n", pressure=None, therm=THERM_APPLE_SILICON, swap="garbage",
                          wired="sysctl: unknown oid 'iogpu.wired_limit_mb'", ioreg="")))
    for name in ("Low Power Mode", "thermal state", "swap in use", "GPU wired limit", "GPU busy before the run"):
        assert rep[name]["status"] == "not checked", name
    assert "No thermal warning level" in rep["thermal state"]["evidence"]


def test_old_device_info_without_a_name_still_knows_the_gpu_family():
    rep = by_name(run(mac(INFO_M2_ULTRA_OLD), BF16_MTP, 20 * GIB))
    assert rep["chip and GPU"]["status"] == "not checked"
    assert rep["bfloat16 on this GPU"]["status"] == "warn"  # family 14: M2, no native bfloat16
    wide = rep["wide verify on this chip"]  # the generation from the architecture alone: inferred, not this chip's
    assert "an Apple M2 chip (GPU generation 14)" in wide["evidence"] and "not measured on this chip" in wide["evidence"]
    assert rep["model vs GPU working set"]["status"] == "pass"


def test_mlx_on_the_cpu_of_a_mac_fails():
    r = mac()
    r._mlx_device = "Device(cpu, 0)"
    assert by_name(run(r))["versions and device"]["status"] == "fail"


def test_m3_max_bins_need_the_core_count():
    ioreg_40 = ioreg_m1_max(0).replace('"gpu-core-count" = 32', '"gpu-core-count" = 40')
    assert "409.6 GB/s" in by_name(run(mac(INFO_M3_MAX, ioreg=ioreg_40)))["chip and GPU"]["evidence"]
    ioreg_30 = ioreg_m1_max(0).replace('"gpu-core-count" = 32', '"gpu-core-count" = 30')
    assert "307.2 GB/s" in by_name(run(mac(INFO_M3_MAX, ioreg=ioreg_30)))["chip and GPU"]["evidence"]
    r = mac(INFO_M3_MAX, ioreg="")
    ev = by_name(run(r))["chip and GPU"]["evidence"]
    assert "no nominal bandwidth" in ev and "bins differ" in ev


# -- what a wide verify costs on this chip (issue 56): the generation, qmv_wide, the public figure and its source ------

def wide(reader) -> dict:
    return by_name(run(reader))["wide verify on this chip"]


def test_an_m1_max_is_told_the_m2s_figure_as_its_generations_not_its_own_and_no_qmv_wide():
    c = wide(mac())
    assert c["status"] == "pass"
    ev = c["evidence"]
    assert "Apple M1 Max (GPU generation 13)" in ev and "qmv_wide does not apply to affine-quantized" in ev
    assert "M2: 2 positions cost 1.725× one decode step" in ev and "ml-explore/mlx-lm#990" in ev
    assert "Expected from its generation, not measured on this chip (generation 13 takes the same kernel path as the " \
        "M2: no qmv_wide for affine weights)" in ev
    assert "qmv_wide applies" not in ev and "Measured on this chip" not in ev  # the negative controls


def test_an_m2_gets_its_own_measurement_and_no_qmv_wide():
    ev = wide(mac(INFO_M2, ioreg=""))["evidence"]
    assert "Apple M2 (GPU generation 14)" in ev and "qmv_wide does not apply" in ev
    assert "Measured on this chip: M2: 2 positions cost 1.725× one decode step" in ev and "mlx-lm#990" in ev


def test_an_m4_has_qmv_wide_cites_the_m4_pro_and_is_never_given_the_m2s_figure():
    versions = {**MAC_VERSIONS, "mlx": "0.32.4"}
    r = mac(INFO_M4, ioreg=IOREG_M4_BUSY.replace('"Device Utilization %"=30', '"Device Utilization %"=0'))
    r._versions = versions
    c = wide(r)
    ev = c["evidence"]
    assert c["status"] == "pass" and "Apple M4 (GPU generation 16)" in ev and "qmv_wide applies" in ev
    assert "This MLX: 0.32.4 (has it)" in ev
    assert "not measured on this chip (the M4 Pro of the same generation): M4 Pro: 4 positions cost 1.47× one decode " \
        "step" in ev and "mlx#3839" in ev
    assert "1.725" not in ev and "Measured on this chip" not in ev  # the negative controls
    old = wide(mac(INFO_M4, ioreg=""))  # MLX 0.30.4: no qmv_wide in it yet
    assert old["status"] == "warn" and "predates qmv_wide" in old["evidence"] and "mlx>=0.32" in old["fix"]


def test_energy_on_an_m1_max_with_and_without_the_mac_extra_never_fails():
    c = by_name(run(mac()))["energy readings"]
    assert c["status"] == "pass" and "macmon-lib 0.7.0" in c["evidence"] and "SiliconScope" in c["evidence"]
    assert "only at power-management events" in c["evidence"] and "macOS 15.1" in c["evidence"]
    assert "checks the cadence during the run" in c["evidence"]
    r = mac()
    r._versions = {**MAC_VERSIONS, "macmon-lib": None}
    missing = by_name(run(r))["energy readings"]
    assert missing["status"] == "not checked" and "pip install 'specscope[mac]'" in missing["evidence"]
    r._versions = {k: v for k, v in MAC_VERSIONS.items() if k != "macmon-lib"}  # readings recorded before this check
    assert "recorded before" in by_name(run(r))["energy readings"]["evidence"]
    other = by_name(run(mac(INFO_M3_MAX, ioreg="")))["energy readings"]["evidence"]  # a chip the notes do not name
    assert "no cadence for this chip (M3 Max)" in other


# -- Linux ------------------------------------------------------------------------------------------------------

MEMINFO = "MemTotal:       32768000 kB\nMemFree:         1000000 kB\nMemAvailable:   16384000 kB\n"


def linux(load="0.20 0.30 0.25 1/300 4242\n", governors=("performance", "performance"), meminfo=MEMINFO, cpus=2):
    files = {pf.LOADAVG: load, pf.MEMINFO: meminfo}
    for i, g in enumerate(governors):
        files[f"/sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor"] = g + "\n"
    return RecordedReader("Linux", files=files, device_info=INFO_LINUX, cpu_count=cpus, mlx_device="Device(cpu, 0)",
                          versions={"mlx": "0.32.4", "mlx-lm": "0.32.2"})


def test_linux_healthy_passes_and_each_problem_is_named():
    rep = run(linux(), [], 2 * GIB)
    assert rep["status"] == "pass", pf.format_report(rep)
    assert "Intel(R) Xeon(R) Silver 4410T" in by_name(rep)["MLX backend and device"]["evidence"]
    bad = by_name(run(linux(load="3.90 2.0 1.0 5/300 1\n", governors=("powersave", "performance")), [], 20 * GIB))
    assert bad["other processes' load"]["status"] == "warn"
    assert bad["CPU frequency governor"]["status"] == "warn" and "cpupower" in bad["CPU frequency governor"]["fix"]
    assert bad["free memory"]["status"] == "fail"
    assert by_name(run(linux(), [], 14 * GIB))["free memory"]["status"] == "warn"


def test_linux_says_the_chip_facts_and_energy_do_not_apply_and_shows_no_figure():
    rep = run(linux(), [], 2 * GIB)
    c, e = by_name(rep)["wide verify on this chip"], by_name(rep)["energy readings"]
    assert c["status"] == "not checked" and "do not apply here" in c["evidence"] and "CPU backend" in c["evidence"]
    assert e["status"] == "not checked" and "not available here (energy counters are read on macOS on Apple silicon " \
        "only)" in e["evidence"]
    assert not any(ch.isdigit() for ch in c["evidence"] + e["evidence"]) and rep["status"] == "pass"


def test_linux_without_cpufreq_or_proc_is_not_checked():
    rep = by_name(run(linux(governors=(), load=None, meminfo=None), [], 2 * GIB))
    assert rep["CPU frequency governor"]["status"] == "not checked"
    assert rep["other processes' load"]["status"] == "not checked"
    assert rep["free memory"]["status"] == "not checked"


def test_this_machine_is_read_without_error():
    """The real reader on this (Linux) machine: whatever its state, every check gives one of the four statuses."""
    rep = pf.evaluate(pf.take_readings(SystemReader()))
    assert rep["system"] == SystemReader().system
    assert all(c["status"] in ("pass", "warn", "fail", "not checked") for c in rep["checks"])


@pytest.mark.parametrize("missing", ["no-such-command-for-specscope"])
def test_the_system_reader_says_none_for_a_command_that_cannot_run(missing):
    assert SystemReader().run([missing]) is None
    assert SystemReader().read("/no/such/file") is None


def test_parts_as_loaded_from_the_opened_demo_engine():
    """The dtypes read off the loaded parameters: the shipped demo's trunk is float32, and its MTP head (a bfloat16
    file) runs in the target's float32 once loaded."""
    from specscope.engine_adapter.engine import Engine
    from specscope.engine_adapter.params import EngineParams

    engine = Engine.open(EngineParams(demo=True, demo_variant="trained", drafter="mtp"))
    parts, nbytes = parts_from_engine(engine)
    assert [(p["part"], p["dtype"]) for p in parts] == [("target", "float32"), ("MTP head", "float32")]
    assert nbytes == engine.target.checkpoint.file_bytes
    head = engine.make_drafter()  # the head as the run loads it: its float weights are the target's dtype
    from specscope.engine_adapter.mlx_types import flat

    floats = {str(v.dtype) for k, v in flat(head.head.parameters()) if "float" in str(v.dtype)}
    assert floats == {"mlx.core.float32"}
