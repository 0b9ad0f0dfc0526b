run scenarios/workloads/mixtral-8x7b-train-ep8.yaml
