# SPDX-License-Identifier: MIT
# Sourced by localize.sh and tests/static-symbols.sh: the global names of
# libsoftrdma.a, the public API of libibverbs and librdmacm as rdma-core
# has it, and softrdma's control API. An extended regular expression.
# shellcheck shell=sh
public_names='^(ibv_.*|_ibv_.*|rdma_.*|softrdma_.*|mbps_to_ibv_rate|mult_to_ibv_rate|rsocket|rbind|rlisten|raccept|rconnect|rshutdown|rclose|rrecv|rrecvfrom|rrecvmsg|rsend|rsendto|rsendmsg|rread|rreadv|rwrite|rwritev|rpoll|rselect|rgetpeername|rgetsockname|rsetsockopt|rgetsockopt|rfcntl|riomap|riounmap|riowrite)$'
