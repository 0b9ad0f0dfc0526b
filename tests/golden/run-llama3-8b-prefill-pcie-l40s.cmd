run scenarios/workloads/llama3-8b-prefill-pcie-l40s.yaml
