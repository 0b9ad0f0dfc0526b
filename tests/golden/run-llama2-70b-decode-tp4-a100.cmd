run scenarios/workloads/llama2-70b-decode-tp4-a100.yaml
