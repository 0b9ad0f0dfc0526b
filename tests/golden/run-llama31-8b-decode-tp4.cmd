run scenarios/workloads/llama31-8b-decode-tp4.yaml
