# Quick start (README): `make demo` and `make test` on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
OUT    ?= build

.PHONY: demo test docs fmus bench hil clean

$(VENV)/.installed: pyproject.toml .ci/constraints.txt
	@echo "== installing embed-fmu and its test tools into $(VENV) (pip, sympy, symengine, fmpy, pythonfmu, ...): a minute or two"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar off -c .ci/constraints.txt -e '.[test]'
	@echo "== installed into $(VENV)"
	touch $@

fmus: $(VENV)/.installed
	$(PY) build_fmu.py --all --out $(OUT)

demo: fmus
	$(PY) -m fmu_src.host.demo $(OUT)/disk_ramp.fmu --png $(OUT)/disk_ramp_fig7.png

test: $(VENV)/.installed
	$(PY) -m pytest

docs: $(VENV)/.installed
	$(PY) -m sphinx -W -b html docs $(OUT)/docs

bench: fmus
	$(PY) benchmarks/bench_disk_ramp.py --fmu $(OUT)/disk_ramp.fmu
	$(PY) benchmarks/bench_pendulum_belt.py --fmu $(OUT)/pendulum_belt.fmu
	$(PY) benchmarks/bench_general.py
	$(PY) benchmarks/bench_masters.py --fmu $(OUT)/disk_ramp.fmu
	$(PY) benchmarks/bench_sweep.py

hil: fmus
	$(PY) benchmarks/hil_disk_fence.py --fmu $(OUT)/disk_fence.fmu
	$(PY) benchmarks/hil_chain.py --fmu $(OUT)/pendulum_chain.fmu
	$(PY) benchmarks/hil_fences.py --fmu build=$(OUT)/disk_fence.fmu --reps 3

clean:
	rm -rf $(OUT) .pytest_cache
