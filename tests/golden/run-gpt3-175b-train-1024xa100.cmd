run scenarios/workloads/gpt3-175b-train-1024xa100.yaml
