/* sim/gen_int.h - private to the simulator's generator (catalog.c, gen.c):
 * the metric family table, the per-series catalogue and the generator
 * handle. Nothing outside src/sim includes this. */
#ifndef GW_SIM_GEN_INT_H
#define GW_SIM_GEN_INT_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/sim.h"

/* Every metric family the generator can emit:
 * X(enum id, metric name, type, job (0 dcgm, 1 node, 2 both = Prometheus' own), help). */
#define GW_SIM_FAMILIES(X) \
    /* dcgm-exporter default counters (etc/default-counters.csv): 25 */ \
    X(F_SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", "gauge", 0, "SM clock frequency (in MHz).") \
    X(F_MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK", "gauge", 0, "Memory clock frequency (in MHz).") \
    X(F_MEMORY_TEMP, "DCGM_FI_DEV_MEMORY_TEMP", "gauge", 0, "Memory temperature (in C).") \
    X(F_GPU_TEMP, "DCGM_FI_DEV_GPU_TEMP", "gauge", 0, "GPU temperature (in C).") \
    X(F_POWER_USAGE, "DCGM_FI_DEV_POWER_USAGE", "gauge", 0, "Power draw (in W).") \
    X(F_TOTAL_ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", 0, "Total energy consumption since boot (in mJ).") \
    X(F_PCIE_REPLAY, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", 0, "Total number of PCIe retries.") \
    X(F_GPU_UTIL, "DCGM_FI_DEV_GPU_UTIL", "gauge", 0, "GPU utilization (in %).") \
    X(F_MEM_COPY_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", 0, "Memory utilization (in %).") \
    X(F_ENC_UTIL, "DCGM_FI_DEV_ENC_UTIL", "gauge", 0, "Encoder utilization (in %).") \
    X(F_DEC_UTIL, "DCGM_FI_DEV_DEC_UTIL", "gauge", 0, "Decoder utilization (in %).") \
    X(F_XID_ERRORS, "DCGM_FI_DEV_XID_ERRORS", "gauge", 0, "Value of the last XID error encountered.") \
    X(F_FB_FREE, "DCGM_FI_DEV_FB_FREE", "gauge", 0, "Framebuffer memory free (in MiB).") \
    X(F_FB_USED, "DCGM_FI_DEV_FB_USED", "gauge", 0, "Framebuffer memory used (in MiB).") \
    X(F_FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED", "gauge", 0, "Framebuffer memory reserved (in MiB).") \
    X(F_NVLINK_BW_TOTAL, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", 0, "Total number of NVLink bandwidth counters for all lanes.") \
    X(F_VGPU_LICENSE, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", 0, "vGPU License status") \
    X(F_UNCORR_REMAP, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", 0, "Number of remapped rows for uncorrectable errors") \
    X(F_CORR_REMAP, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", 0, "Number of remapped rows for correctable errors") \
    X(F_REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", 0, "Whether remapping of rows has failed") \
    X(F_GR_ENGINE_ACTIVE, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", 0, "Ratio of time the graphics engine is active.") \
    X(F_TENSOR_ACTIVE, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", 0, "Ratio of cycles the tensor (HMMA) pipe is active.") \
    X(F_DRAM_ACTIVE, "DCGM_FI_PROF_DRAM_ACTIVE", "gauge", 0, "Ratio of cycles the device memory interface is active sending or receiving data.") \
    X(F_PCIE_TX, "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 0, "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.") \
    X(F_PCIE_RX, "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", 0, "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.") \
    /* optional, failure-relevant fields */ \
    X(F_ECC_SBE_VOL, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", 0, "Total number of single-bit volatile ECC errors.") \
    X(F_ECC_DBE_VOL, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", 0, "Total number of double-bit volatile ECC errors.") \
    X(F_ECC_SBE_AGG, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", 0, "Total number of single-bit persistent ECC errors.") \
    X(F_ECC_DBE_AGG, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", 0, "Total number of double-bit persistent ECC errors.") \
    X(F_NVL_CRC_FLIT, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", 0, "Total number of NVLink flow-control CRC errors.") \
    X(F_NVL_CRC_DATA, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", 0, "Total number of NVLink data CRC errors.") \
    X(F_NVL_REPLAY, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", 0, "Total number of NVLink retries.") \
    X(F_NVL_RECOVERY, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", 0, "Total number of NVLink recovery errors.") \
    X(F_POWER_VIOL, "DCGM_FI_DEV_POWER_VIOLATION", "counter", 0, "Throttling duration due to power constraints (in us).") \
    X(F_THERMAL_VIOL, "DCGM_FI_DEV_THERMAL_VIOLATION", "counter", 0, "Throttling duration due to thermal constraints (in us).") \
    X(F_SYNC_BOOST_VIOL, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter", 0, "Throttling duration due to sync-boost constraints (in us).") \
    X(F_BOARD_LIMIT_VIOL, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter", 0, "Throttling duration due to board limit constraints (in us).") \
    X(F_LOW_UTIL_VIOL, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter", 0, "Throttling duration due to low utilization (in us).") \
    X(F_RELIABILITY_VIOL, "DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter", 0, "Throttling duration due to reliability constraints (in us).") \
    X(F_REMAP_PENDING, "DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", 0, "Whether remapping of rows is pending") \
    X(F_CLOCK_REASONS, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", 0, "Current clock event reasons (bitmask).") \
    X(F_ENFORCED_PLIMIT, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", 0, "Effective power limit that the driver enforces after taking into account all limiters (in W).") \
    X(F_FB_TOTAL, "DCGM_FI_DEV_FB_TOTAL", "gauge", 0, "Total framebuffer memory (in MiB).") \
    X(F_SM_ACTIVE, "DCGM_FI_PROF_SM_ACTIVE", "gauge", 0, "The ratio of cycles an SM has at least 1 warp assigned.") \
    X(F_NVLINK_TX, "DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", 0, "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second.") \
    X(F_NVLINK_RX, "DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", 0, "The rate of data received over NVLink, not including protocol headers, in bytes per second.") \
    X(F_XID_COUNT, "DCGM_EXP_XID_ERRORS_COUNT", "gauge", 0, "Count of XID Errors within user-specified time window (see xid-count-window-size param).") \
    /* node_exporter: cpu, stat, loadavg, vmstat, meminfo */ \
    X(F_CPU_SECONDS, "node_cpu_seconds_total", "counter", 1, "Seconds the CPUs spent in each mode.") \
    X(F_INTR, "node_intr_total", "counter", 1, "Total number of interrupts serviced.") \
    X(F_CTXT, "node_context_switches_total", "counter", 1, "Total number of context switches.") \
    X(F_FORKS, "node_forks_total", "counter", 1, "Total number of forks.") \
    X(F_PROCS_RUNNING, "node_procs_running", "gauge", 1, "Number of processes in runnable state.") \
    X(F_PROCS_BLOCKED, "node_procs_blocked", "gauge", 1, "Number of processes blocked waiting for I/O to complete.") \
    X(F_BOOT_TIME, "node_boot_time_seconds", "gauge", 1, "Node boot time, in unixtime.") \
    X(F_TIME, "node_time_seconds", "gauge", 1, "System time in seconds since epoch (1970).") \
    X(F_UNAME, "node_uname_info", "gauge", 1, "Labeled system information as provided by the uname system call.") \
    X(F_LOAD1, "node_load1", "gauge", 1, "1m load average.") \
    X(F_LOAD5, "node_load5", "gauge", 1, "5m load average.") \
    X(F_LOAD15, "node_load15", "gauge", 1, "15m load average.") \
    X(F_PGPGIN, "node_vmstat_pgpgin", "untyped", 1, "/proc/vmstat information field pgpgin.") \
    X(F_PGPGOUT, "node_vmstat_pgpgout", "untyped", 1, "/proc/vmstat information field pgpgout.") \
    X(F_PSWPIN, "node_vmstat_pswpin", "untyped", 1, "/proc/vmstat information field pswpin.") \
    X(F_PSWPOUT, "node_vmstat_pswpout", "untyped", 1, "/proc/vmstat information field pswpout.") \
    X(F_PGFAULT, "node_vmstat_pgfault", "untyped", 1, "/proc/vmstat information field pgfault.") \
    X(F_PGMAJFAULT, "node_vmstat_pgmajfault", "untyped", 1, "/proc/vmstat information field pgmajfault.") \
    X(F_OOM_KILL, "node_vmstat_oom_kill", "untyped", 1, "/proc/vmstat information field oom_kill.") \
    X(F_MEM_TOTAL, "node_memory_MemTotal_bytes", "gauge", 1, "Memory information field MemTotal_bytes.") \
    X(F_MEM_FREE, "node_memory_MemFree_bytes", "gauge", 1, "Memory information field MemFree_bytes.") \
    X(F_MEM_AVAIL, "node_memory_MemAvailable_bytes", "gauge", 1, "Memory information field MemAvailable_bytes.") \
    X(F_MEM_BUFFERS, "node_memory_Buffers_bytes", "gauge", 1, "Memory information field Buffers_bytes.") \
    X(F_MEM_CACHED, "node_memory_Cached_bytes", "gauge", 1, "Memory information field Cached_bytes.") \
    X(F_MEM_ACTIVE, "node_memory_Active_bytes", "gauge", 1, "Memory information field Active_bytes.") \
    X(F_MEM_INACTIVE, "node_memory_Inactive_bytes", "gauge", 1, "Memory information field Inactive_bytes.") \
    X(F_MEM_DIRTY, "node_memory_Dirty_bytes", "gauge", 1, "Memory information field Dirty_bytes.") \
    X(F_MEM_WRITEBACK, "node_memory_Writeback_bytes", "gauge", 1, "Memory information field Writeback_bytes.") \
    X(F_MEM_SHMEM, "node_memory_Shmem_bytes", "gauge", 1, "Memory information field Shmem_bytes.") \
    X(F_MEM_SLAB, "node_memory_Slab_bytes", "gauge", 1, "Memory information field Slab_bytes.") \
    X(F_MEM_SRECLAIM, "node_memory_SReclaimable_bytes", "gauge", 1, "Memory information field SReclaimable_bytes.") \
    X(F_MEM_SUNRECLAIM, "node_memory_SUnreclaim_bytes", "gauge", 1, "Memory information field SUnreclaim_bytes.") \
    X(F_MEM_MAPPED, "node_memory_Mapped_bytes", "gauge", 1, "Memory information field Mapped_bytes.") \
    X(F_MEM_ANON, "node_memory_AnonPages_bytes", "gauge", 1, "Memory information field AnonPages_bytes.") \
    X(F_MEM_PAGETABLES, "node_memory_PageTables_bytes", "gauge", 1, "Memory information field PageTables_bytes.") \
    X(F_MEM_COMMITTED, "node_memory_Committed_AS_bytes", "gauge", 1, "Memory information field Committed_AS_bytes.") \
    X(F_MEM_SWAPTOTAL, "node_memory_SwapTotal_bytes", "gauge", 1, "Memory information field SwapTotal_bytes.") \
    X(F_MEM_SWAPFREE, "node_memory_SwapFree_bytes", "gauge", 1, "Memory information field SwapFree_bytes.") \
    X(F_MEM_HP_TOTAL, "node_memory_HugePages_Total", "gauge", 1, "Memory information field HugePages_Total.") \
    X(F_MEM_HP_SIZE, "node_memory_Hugepagesize_bytes", "gauge", 1, "Memory information field Hugepagesize_bytes.") \
    /* netdev + netclass */ \
    X(F_NET_RX_BYTES, "node_network_receive_bytes_total", "counter", 1, "Network device statistic receive_bytes.") \
    X(F_NET_RX_PACKETS, "node_network_receive_packets_total", "counter", 1, "Network device statistic receive_packets.") \
    X(F_NET_RX_ERRS, "node_network_receive_errs_total", "counter", 1, "Network device statistic receive_errs.") \
    X(F_NET_RX_DROP, "node_network_receive_drop_total", "counter", 1, "Network device statistic receive_drop.") \
    X(F_NET_TX_BYTES, "node_network_transmit_bytes_total", "counter", 1, "Network device statistic transmit_bytes.") \
    X(F_NET_TX_PACKETS, "node_network_transmit_packets_total", "counter", 1, "Network device statistic transmit_packets.") \
    X(F_NET_TX_ERRS, "node_network_transmit_errs_total", "counter", 1, "Network device statistic transmit_errs.") \
    X(F_NET_TX_DROP, "node_network_transmit_drop_total", "counter", 1, "Network device statistic transmit_drop.") \
    X(F_NET_SPEED, "node_network_speed_bytes", "gauge", 1, "Network device property: speed_bytes") \
    X(F_NET_MTU, "node_network_mtu_bytes", "gauge", 1, "Network device property: mtu_bytes") \
    X(F_NET_UP, "node_network_up", "gauge", 1, "Value is 1 if operstate is 'up', 0 otherwise.") \
    /* infiniband (RoCE ports show up as mlx5_N) */ \
    X(F_IB_INFO, "node_infiniband_info", "gauge", 1, "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.") \
    X(F_IB_RX_BYTES, "node_infiniband_port_data_received_bytes_total", "counter", 1, "Number of data octets received on all links") \
    X(F_IB_TX_BYTES, "node_infiniband_port_data_transmitted_bytes_total", "counter", 1, "Number of data octets transmitted on all links") \
    X(F_IB_RX_PACKETS, "node_infiniband_port_packets_received_total", "counter", 1, "Number of packets received on all VLs by this port (including errors)") \
    X(F_IB_TX_PACKETS, "node_infiniband_port_packets_transmitted_total", "counter", 1, "Number of packets transmitted on all VLs from this port (including errors)") \
    X(F_IB_RX_ERRORS, "node_infiniband_port_errors_received_total", "counter", 1, "Number of packets containing an error that were received on this port") \
    X(F_IB_RX_DISCARDS, "node_infiniband_port_discards_received_total", "counter", 1, "Number of inbound packets discarded by the port because the port is down or congested") \
    X(F_IB_TX_DISCARDS, "node_infiniband_port_discards_transmitted_total", "counter", 1, "Number of outbound packets discarded by the port because the port is down or congested") \
    X(F_IB_TX_WAIT, "node_infiniband_port_transmit_wait_total", "counter", 1, "Number of ticks during which the port had data to transmit but no data was sent during the entire tick") \
    X(F_IB_SYMBOL_ERR, "node_infiniband_symbol_error_total", "counter", 1, "Number of minor link errors detected on one or more physical lanes.") \
    X(F_IB_LINK_DOWNED, "node_infiniband_link_downed_total", "counter", 1, "Number of times the link failed to recover from an error state and went down") \
    X(F_IB_LINK_RECOVERY, "node_infiniband_link_error_recovery_total", "counter", 1, "Number of times the link successfully recovered from an error state") \
    X(F_IB_LLI_ERR, "node_infiniband_local_link_integrity_errors_total", "counter", 1, "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors.") \
    X(F_IB_EBO_ERR, "node_infiniband_excessive_buffer_overrun_errors_total", "counter", 1, "Number of times that OverrunErrors consecutive flow control update periods occurred, each having at least one overrun error.") \
    X(F_IB_RRP_ERR, "node_infiniband_port_receive_remote_physical_errors_total", "counter", 1, "Number of packets marked with the EBP (End of Bad Packet) delimiter received on the port.") \
    X(F_IB_NP_ECN, "node_infiniband_np_ecn_marked_roce_packets_received_total", "counter", 1, "The number of RoCEv2 packets received by the notification point which were marked for experiencing the congestion (ECN bits where '11' on the ingress RoCE traffic) . The counters was added in MLNX_OFED 4.1") \
    X(F_IB_NP_CNP, "node_infiniband_np_cnp_packets_sent_total", "counter", 1, "The number of CNP packets sent by the Notification Point when it noticed congestion experienced in the RoCEv2 IP header (ECN bits). The counters was added in MLNX_OFED 4.1") \
    X(F_IB_RP_CNP, "node_infiniband_rp_cnp_packets_handled_total", "counter", 1, "The number of CNP packets handled by the Reaction Point HCA to throttle the transmission rate. The counters was added in MLNX_OFED 4.1") \
    X(F_IB_ADP_RETRANS, "node_infiniband_roce_adp_retransmits_total", "counter", 1, "The number of adaptive retransmissions for RoCE traffic. The counter was added in MLNX_OFED rev 5.0-1.0.0.0 and kernel v5.6.0") \
    X(F_IB_OOS, "node_infiniband_out_of_sequence_packets_received_total", "counter", 1, "The number of out of sequence packets received.") \
    X(F_IB_OOB_DROPS, "node_infiniband_out_of_buffer_drops_total", "counter", 1, "The number of drops occurred due to lack of WQE for the associated QPs.") \
    X(F_IB_PSEQ_ERR, "node_infiniband_packet_sequence_errors_total", "counter", 1, "The number of received NAK sequence error packets. The QP retry limit was not exceeded.") \
    X(F_IB_ACK_TIMEOUT, "node_infiniband_local_ack_timeout_errors_total", "counter", 1, "The number of times QP's ack timer expired for RC, XRC, DCT QPs at the sender side. The QP retry limit was not exceed, therefore it is still recoverable error.") \
    X(F_IB_STATE, "node_infiniband_state_id", "gauge", 1, "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)") \
    X(F_IB_PHYS_STATE, "node_infiniband_physical_state_id", "gauge", 1, "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)") \
    X(F_IB_RATE, "node_infiniband_rate_bytes_per_second", "gauge", 1, "Maximum signal transfer rate") \
    /* nfs client (/proc/net/rpc/nfs) */ \
    X(F_NFS_REQUESTS, "node_nfs_requests_total", "counter", 1, "Number of NFS procedures invoked.") \
    X(F_NFS_RPCS, "node_nfs_rpcs_total", "counter", 1, "Total number of RPCs performed.") \
    X(F_NFS_RETRANS, "node_nfs_rpc_retransmissions_total", "counter", 1, "Number of RPC transmissions performed.") \
    X(F_NFS_AUTHREFRESH, "node_nfs_rpc_authentication_refreshes_total", "counter", 1, "Number of RPC authentication refreshes performed.") \
    X(F_NFS_CONNECTIONS, "node_nfs_connections_total", "counter", 1, "Total number of NFSd TCP connections.") \
    X(F_NFS_PACKETS, "node_nfs_packets_total", "counter", 1, "Total NFSd network packets (sent+received) by protocol type.") \
    /* mountstats (/proc/self/mountstats), one NFS mount */ \
    X(F_MS_AGE, "node_mountstats_nfs_age_seconds_total", "counter", 1, "The age of the NFS mount in seconds.") \
    X(F_MS_MOUNT_INFO, "node_mountstats_nfs_mountpoint_info", "gauge", 1, "Info metric for an NFS mountpoint.") \
    X(F_MS_READ_BYTES, "node_mountstats_nfs_read_bytes_total", "counter", 1, "Number of bytes read using the read() syscall.") \
    X(F_MS_WRITE_BYTES, "node_mountstats_nfs_write_bytes_total", "counter", 1, "Number of bytes written using the write() syscall.") \
    X(F_MS_DREAD_BYTES, "node_mountstats_nfs_direct_read_bytes_total", "counter", 1, "Number of bytes read using the read() syscall in O_DIRECT mode.") \
    X(F_MS_DWRITE_BYTES, "node_mountstats_nfs_direct_write_bytes_total", "counter", 1, "Number of bytes written using the write() syscall in O_DIRECT mode.") \
    X(F_MS_TREAD_BYTES, "node_mountstats_nfs_total_read_bytes_total", "counter", 1, "Number of bytes read from the NFS server, in total.") \
    X(F_MS_TWRITE_BYTES, "node_mountstats_nfs_total_write_bytes_total", "counter", 1, "Number of bytes written to the NFS server, in total.") \
    X(F_MS_READ_PAGES, "node_mountstats_nfs_read_pages_total", "counter", 1, "Number of pages read directly via mmap()'d files.") \
    X(F_MS_WRITE_PAGES, "node_mountstats_nfs_write_pages_total", "counter", 1, "Number of pages written directly via mmap()'d files.") \
    X(F_MS_TR_BIND, "node_mountstats_nfs_transport_bind_total", "counter", 1, "Number of times the client has had to establish a connection from scratch to the NFS server.") \
    X(F_MS_TR_CONNECT, "node_mountstats_nfs_transport_connect_total", "counter", 1, "Number of times the client has made a TCP connection to the NFS server.") \
    X(F_MS_TR_IDLE, "node_mountstats_nfs_transport_idle_time_seconds", "gauge", 1, "Duration since the NFS mount last saw any RPC traffic, in seconds.") \
    X(F_MS_TR_SENDS, "node_mountstats_nfs_transport_sends_total", "counter", 1, "Number of RPC requests for this mount sent to the NFS server.") \
    X(F_MS_TR_RECEIVES, "node_mountstats_nfs_transport_receives_total", "counter", 1, "Number of RPC responses for this mount received from the NFS server.") \
    X(F_MS_TR_BADXID, "node_mountstats_nfs_transport_bad_transaction_ids_total", "counter", 1, "Number of times the NFS server sent a response with a transaction ID unknown to this client.") \
    X(F_MS_TR_BACKLOG, "node_mountstats_nfs_transport_backlog_queue_total", "counter", 1, "Total number of items added to the RPC backlog queue.") \
    X(F_MS_TR_MAXSLOTS, "node_mountstats_nfs_transport_maximum_rpc_slots", "gauge", 1, "Maximum number of simultaneously active RPC requests ever used.") \
    X(F_MS_TR_SENDING, "node_mountstats_nfs_transport_sending_queue_total", "counter", 1, "Total number of items added to the RPC transmission sending queue.") \
    X(F_MS_TR_PENDING, "node_mountstats_nfs_transport_pending_queue_total", "counter", 1, "Total number of items added to the RPC transmission pending queue.") \
    X(F_MS_OP_REQUESTS, "node_mountstats_nfs_operations_requests_total", "counter", 1, "Number of requests performed for a given operation.") \
    X(F_MS_OP_TRANSMISSIONS, "node_mountstats_nfs_operations_transmissions_total", "counter", 1, "Number of times an actual RPC request has been transmitted for a given operation.") \
    X(F_MS_OP_MAJOR_TIMEOUTS, "node_mountstats_nfs_operations_major_timeouts_total", "counter", 1, "Number of times a request has had a major timeout for a given operation.") \
    X(F_MS_OP_SENT_BYTES, "node_mountstats_nfs_operations_sent_bytes_total", "counter", 1, "Number of bytes sent for a given operation, including RPC headers and payload.") \
    X(F_MS_OP_RECV_BYTES, "node_mountstats_nfs_operations_received_bytes_total", "counter", 1, "Number of bytes received for a given operation, including RPC headers and payload.") \
    X(F_MS_OP_QUEUE_TIME, "node_mountstats_nfs_operations_queue_time_seconds_total", "counter", 1, "Duration all requests spent queued for transmission for a given operation before they were sent, in seconds.") \
    X(F_MS_OP_RESPONSE_TIME, "node_mountstats_nfs_operations_response_time_seconds_total", "counter", 1, "Duration all requests took to get a reply back after a request for a given operation was transmitted, in seconds.") \
    X(F_MS_OP_REQUEST_TIME, "node_mountstats_nfs_operations_request_time_seconds_total", "counter", 1, "Duration all requests took from when a request was enqueued to when it was completely handled for a given operation, in seconds.") \
    X(F_MS_OP_ERRORS, "node_mountstats_nfs_operations_errors_total", "counter", 1, "Number of errors for a given operation") \
    X(F_MS_EV_INODE_REVAL, "node_mountstats_nfs_event_inode_revalidate_total", "counter", 1, "Number of times cached inode attributes are re-validated from the server.") \
    X(F_MS_EV_DNODE_REVAL, "node_mountstats_nfs_event_dnode_revalidate_total", "counter", 1, "Number of times cached dentry nodes are re-validated from the server.") \
    X(F_MS_EV_DATA_INVAL, "node_mountstats_nfs_event_data_invalidate_total", "counter", 1, "Number of times an inode cache is cleared.") \
    X(F_MS_EV_ATTR_INVAL, "node_mountstats_nfs_event_attribute_invalidate_total", "counter", 1, "Number of times cached inode attributes are invalidated.") \
    X(F_MS_EV_VFS_OPEN, "node_mountstats_nfs_event_vfs_open_total", "counter", 1, "Number of times cached inode attributes are invalidated.") \
    X(F_MS_EV_VFS_LOOKUP, "node_mountstats_nfs_event_vfs_lookup_total", "counter", 1, "Number of times a directory lookup has occurred.") \
    X(F_MS_EV_VFS_ACCESS, "node_mountstats_nfs_event_vfs_access_total", "counter", 1, "Number of times permissions have been checked.") \
    X(F_MS_EV_VFS_WRITEPAGES, "node_mountstats_nfs_event_vfs_write_pages_total", "counter", 1, "Number of times a group of pages have been written.") \
    X(F_MS_EV_VFS_READPAGES, "node_mountstats_nfs_event_vfs_read_pages_total", "counter", 1, "Number of times a group of pages have been read.") \
    X(F_MS_EV_VFS_FSYNC, "node_mountstats_nfs_event_vfs_fsync_total", "counter", 1, "Number of times fsync() has been called on directories and files.") \
    X(F_MS_EV_VFS_FLUSH, "node_mountstats_nfs_event_vfs_flush_total", "counter", 1, "Number of pending writes that have been forcefully flushed to the server.") \
    X(F_MS_EV_SHORT_READ, "node_mountstats_nfs_event_short_read_total", "counter", 1, "Number of times the NFS server gave less data than expected while reading.") \
    X(F_MS_EV_SHORT_WRITE, "node_mountstats_nfs_event_short_write_total", "counter", 1, "Number of times the NFS server wrote less data than expected while writing.") \
    X(F_MS_EV_JUKEBOX, "node_mountstats_nfs_event_jukebox_delay_total", "counter", 1, "Number of times the NFS server indicated EJUKEBOX; retrieving data from offline storage.") \
    /* filesystem */ \
    X(F_FS_AVAIL, "node_filesystem_avail_bytes", "gauge", 1, "Filesystem space available to non-root users in bytes.") \
    X(F_FS_FREE, "node_filesystem_free_bytes", "gauge", 1, "Filesystem free space in bytes.") \
    X(F_FS_SIZE, "node_filesystem_size_bytes", "gauge", 1, "Filesystem size in bytes.") \
    X(F_FS_FILES, "node_filesystem_files", "gauge", 1, "Filesystem total file nodes.") \
    X(F_FS_FILES_FREE, "node_filesystem_files_free", "gauge", 1, "Filesystem total free file nodes.") \
    X(F_FS_READONLY, "node_filesystem_readonly", "gauge", 1, "Filesystem read-only status.") \
    X(F_FS_DEVICE_ERROR, "node_filesystem_device_error", "gauge", 1, "Whether an error occurred while getting statistics for the given device.") \
    /* what Prometheus adds to every target */ \
    X(F_UP, "up", "gauge", 2, "Health of the scrape target: 1 if the last scrape succeeded, 0 otherwise.") \
    X(F_SCRAPE_DURATION, "scrape_duration_seconds", "gauge", 2, "Duration of the scrape in seconds.") \
    X(F_SCRAPE_SAMPLES, "scrape_samples_scraped", "gauge", 2, "Number of samples the target exposed.") \
    X(F_SCRAPE_POST_RELABEL, "scrape_samples_post_metric_relabeling", "gauge", 2, "Number of samples remaining after metric relabeling was applied.") \
    X(F_SCRAPE_SERIES_ADDED, "scrape_series_added", "gauge", 2, "Approximate number of new series in this scrape.")

enum gw_sim_fam {
#define GW_SIM_FAM_ENUM(id, name, type, job, help) id,
    GW_SIM_FAMILIES(GW_SIM_FAM_ENUM)
#undef GW_SIM_FAM_ENUM
    F_COUNT_
};

struct gw_sim_family {
    const char *name, *type, *help;
    uint8_t job;            /* 0 dcgm, 1 node, 2 Prometheus (both jobs) */
};
extern const struct gw_sim_family gw_sim_families[F_COUNT_];
/* 1 for counter and untyped (vmstat) families: they only grow. */
static inline int gw_sim_fam_is_counter(unsigned f) { return gw_sim_families[f].type[0] != 'g'; }

/* Topology constants of the simulated node (catalog.c). */
#define GW_SIM_CPUS 112             /* 2 sockets x 56 cores, SMT off */
#define GW_SIM_CPU_MODES 8
#define GW_SIM_MS_OPS 20            /* NFSv4 operations listed in mountstats */
#define GW_SIM_NFS_METHODS 20
#define GW_SIM_MOUNTS 6
#define GW_SIM_MAX_NICS 82          /* lo + mgmt + 64 compute + 16 storage */
#define GW_SIM_MAX_TRANSPORTS 256
#define GW_SIM_XID_SLOTS 16         /* distinct XID codes remembered per GPU */

extern const char *const gw_sim_cpu_modes[GW_SIM_CPU_MODES];
extern const char *const gw_sim_ms_ops[GW_SIM_MS_OPS];
/* Index of an operation in gw_sim_ms_ops (READ, WRITE, GETATTR, ...). */
enum { GW_SIM_OP_READ = 0, GW_SIM_OP_WRITE = 1, GW_SIM_OP_GETATTR = 2, GW_SIM_OP_COMMIT = 3,
       GW_SIM_OP_LOOKUP = 4, GW_SIM_OP_ACCESS = 5, GW_SIM_OP_OPEN = 6, GW_SIM_OP_CLOSE = 7 };

/* NIC roles: index 0 lo, 1 management, then cfg.compute_nics compute
 * NICs (mlx5_0..), then cfg.storage_nics storage NICs. */
enum gw_sim_nic_role { GW_SIM_NIC_LO, GW_SIM_NIC_MGMT, GW_SIM_NIC_COMPUTE, GW_SIM_NIC_STORAGE };

/* One series. Static facts only; values live in gen.c's flat arrays. */
struct gw_sim_series {
    uint32_t node;
    uint16_t fam;            /* enum gw_sim_fam */
    int8_t gpu;              /* -1 node-level */
    uint8_t job;             /* enum gw_sim_job */
    uint32_t sub;            /* family-specific: cpu*8+mode, nic, op, transport, mount, xid */
    uint64_t key;            /* stable noise key: seed, node, family, gpu, sub */
    const uint8_t *canon;    /* canonical label bytes (labels.h) */
    const uint8_t *pb;       /* protobuf repeated Label fields */
    uint32_t canon_len, pb_len;
};

/* Bytes that never move once handed out (series label bytes). */
struct gw_sim_blk {
    struct gw_sim_blk *next;
    size_t used, cap;
    uint8_t data[];
};

/* Per GPU dynamic state kept across scrapes. */
struct gw_sim_gpu {
    uint32_t xid_code[GW_SIM_XID_SLOTS];      /* codes that have a XID_ERRORS series */
    uint32_t xid_sid[GW_SIM_XID_SLOTS];       /* their series ids */
    uint32_t n_xid;
    uint32_t cnt_code[GW_SIM_XID_SLOTS];      /* codes that have a XID_COUNT series */
    uint32_t cnt_sid[GW_SIM_XID_SLOTS];
    int64_t cnt_last[GW_SIM_XID_SLOTS];       /* time of the last occurrence */
    uint32_t n_cnt;
    uint32_t latched;                         /* last XID shown (0 none) */
    int32_t latched_failure;                  /* failure that set it, -1 */
    uint64_t seen[8];                         /* (failure index << 16 | code) already latched */
    uint32_t n_seen;
    int32_t mem_failure;                      /* memory failure on this GPU, -1 */
    double temp_off;                          /* per-GPU offsets */
    double clk_off;
    double drift_phase;
};

/* Per target (node x job). */
struct gw_sim_target {
    uint32_t *sids;          /* static series of this target in emit order */
    uint32_t n_sids;
    uint32_t meta_sid[5];    /* up, scrape_duration_seconds, ... (UINT32_MAX when filtered) */
    int64_t offset_ms;       /* fixed offset within the interval */
    int64_t last_t;          /* last computed scrape time, INT64_MIN before the first */
    uint32_t restarts;       /* exporter restarts already applied */
    int started;             /* 1 after the first emitted scrape */
};

struct gw_sim_node_rt {
    struct gw_sim_gpu gpu[GW_SIM_MAX_GPUS];
    double boot_time_s;
    double mem_total;
    double maxslots[GW_SIM_MAX_TRANSPORTS];   /* transport high-water marks */
    double load1, load5, load15;
    int64_t mem_event_until;                  /* GETATTR/pgpgout burst end */
};

struct gw_sim_gen {
    const struct gw_sim_timeline *tl;
    struct gw_sim_config cfg;
    const struct gw_sim_gpu_spec *spec;   /* cfg.gpu_model's figures */
    void *last_ctx;          /* gen.c: per node x GPU, the last unfrozen readings (GSP hang) */
    uint8_t *has_last;
    gw_sim_series_filter filter;
    void *filter_ud;
    uint8_t keep[F_COUNT_];

    /* catalogue */
    struct gw_sim_series *series;
    size_t n_series, cap_series;
    double *acc;             /* per series: counter accumulator / gauge state */
    struct gw_sim_blk *blk;
    uint32_t n_nics, n_transports;

    /* targets: index = node * 2 + job */
    struct gw_sim_target *targets;
    struct gw_sim_node_rt *rt;   /* per node */

    /* iteration */
    int64_t n_rounds, round;
    uint32_t cursor;         /* next target within the round */
    int64_t jitter_ms;

    /* output buffers */
    uint32_t *out_ids;
    double *out_v;
    size_t out_cap;
};

/* catalog.c */
int gw_sim_cat_build(struct gw_sim_gen *g, struct gw_error *err);
/* Series id of XID_ERRORS (count = 0) or XID_COUNT (count = 1) for code on
 * one GPU, created on first use. UINT32_MAX when the family is filtered out. */
int gw_sim_cat_xid_series(struct gw_sim_gen *g, uint32_t node, uint32_t gpu, uint32_t code,
                          int count, uint32_t *sid, struct gw_error *err);
const char *gw_sim_xid_msg(uint32_t code);
void gw_sim_cat_free(struct gw_sim_gen *g);

/* Counter-based noise: a 64-bit mix of a key (splitmix64 finalizer). */
static inline uint64_t gw_sim_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
/* Uniform in [0, 1). */
static inline double gw_sim_u01(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

#endif /* GW_SIM_GEN_INT_H */
