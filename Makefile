# Two commands on a fresh machine (no GPU needed):  make demo   and   make test
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0   # the CPU build; otherwise tilelang pulls a multi-GB CUDA torch
	$(PY) -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/tileroof analyze examples/gemm.py:matmul -p M=4096 -p N=4096 -p K=4096

test: $(VENV)/.installed
	$(VENV)/bin/tileroof score --check    # prints the model-vs-GPU tables (H200, H100); fails on an accuracy regression
	$(PY) -m pytest tests

bench: $(VENV)/.installed
	$(PY) benchmarks/analysis_speed.py
	$(PY) benchmarks/ablation.py

.PHONY: install demo test bench
