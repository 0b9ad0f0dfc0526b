import hostfile tests/data/real-cases/import/hosts-openmpi.txt --node dgx-h100
