run scenarios/workloads/llama2-70b-serving-tp4-a100.yaml
