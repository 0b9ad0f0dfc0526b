run scenarios/workloads/llama3-405b-train-16kxh100.yaml
