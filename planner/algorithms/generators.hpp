#pragma once
// What each generator file gives the registry (registry.cpp): the build, the refusal (why it
// cannot build a request, after the checks every algorithm shares; empty when it can), for
// schedules whose size grows with ranks² the closed-form op count (estimated_ops), and for an
// algorithm that needs a particular placement its placement rules (GroupShape).

#include <string>

#include "models/collective/schedule.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "planner/algorithms/builder.hpp"
#include "planner/algorithms/registry.hpp"

namespace ccsim::planner::detail {

// ring.cpp
void ring(Builder& b);
std::string ring_refusal(const AlgorithmRequest& r);
double ring_ops(const AlgorithmRequest& r);
// tree.cpp
void tree(Builder& b);
std::string tree_refusal(const AlgorithmRequest& r);
bool tree_nccl_auto(const GroupShape& g);
// recursive.cpp
void halving_doubling(Builder& b);
std::string halving_doubling_refusal(const AlgorithmRequest& r);
void recursive_doubling(Builder& b);
std::string recursive_doubling_refusal(const AlgorithmRequest& r);
// bruck.cpp
void bruck(Builder& b);
std::string bruck_refusal(const AlgorithmRequest& r);
double bruck_ops(const AlgorithmRequest& r);
// direct.cpp
void direct(Builder& b);
std::string direct_refusal(const AlgorithmRequest& r);
double direct_ops(const AlgorithmRequest& r);
void pairwise(Builder& b);
std::string pairwise_refusal(const AlgorithmRequest& r);
double pairwise_ops(const AlgorithmRequest& r);
// hierarchical.cpp
void hierarchical(Builder& b);
std::string hierarchical_refusal(const AlgorithmRequest& r);
// nvls.cpp
void nvls(Builder& b);
std::string nvls_refusal(const AlgorithmRequest& r);
void nvls_tree(Builder& b);
std::string nvls_tree_refusal(const AlgorithmRequest& r);
std::string nvls_placement_refusal(const GroupShape& g);
bool nvls_nccl_placement(const GroupShape& g);
std::string nvls_tree_placement_refusal(const GroupShape& g);
bool nvls_tree_nccl_placement(const GroupShape& g);
// pat.cpp
void pat(Builder& b);
/// Ranks up to which PAT is simulated (pat_refusal refuses more: a clear error, not a run of minutes).
inline constexpr int kPatMaxRanks = 256;
std::string pat_refusal(const AlgorithmRequest& r);
double pat_ops(const AlgorithmRequest& r);
std::string pat_placement_refusal(const GroupShape& g);
bool pat_nccl_placement(const GroupShape& g);

// vllm_allreduce.cpp
models::Schedule vllm_one_shot(const AlgorithmRequest& r);
models::Schedule vllm_two_shot(const AlgorithmRequest& r);
std::string vllm_one_shot_refusal(const AlgorithmRequest& r);
std::string vllm_two_shot_refusal(const AlgorithmRequest& r);
double vllm_one_shot_ops(const AlgorithmRequest& r);
double vllm_two_shot_ops(const AlgorithmRequest& r);
// p2p.cpp
void p2p(Builder& b);
std::string p2p_refusal(const AlgorithmRequest& r);

}  // namespace ccsim::planner::detail
