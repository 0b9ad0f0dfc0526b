run scenarios/workloads/llama31-8b-decode-tp2.yaml
