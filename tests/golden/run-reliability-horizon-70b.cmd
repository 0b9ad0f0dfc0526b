run scenarios/workloads/llama3-70b-train-64xh100.yaml --horizon 30d
