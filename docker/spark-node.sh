#!/usr/bin/env bash
# Starts one Spark node from the PySpark installed in the image: a standalone master or worker,
# or a Spark Connect server (a standing Spark session the plan step connects to, so no plan
# starts a JVM of its own; its application runs on the standalone master).
#
#   spark-node.sh master                      # listens on $SPARK_MASTER_PORT (7077), UI on 8080
#   spark-node.sh worker spark://HOST:PORT    # registers with that master, UI on 8081
#   spark-node.sh connect spark://HOST:PORT   # Spark Connect on $SPARK_CONNECT_PORT (15002)
#
# The Spark distribution is the one inside the pyspark wheel (it ships bin/spark-class and the
# jars), so master, worker and the drivers started by Airflow tasks are the same Spark and the
# same Python. The node runs in the foreground (exec), so the container stops when it stops.
# How it fails: a missing role or master URL prints the usage line and exits 2; a pyspark that
# cannot be imported stops with Python's ImportError before anything starts.
set -euo pipefail

usage() { echo "usage: spark-node.sh master | worker spark://HOST:PORT | connect spark://HOST:PORT" >&2; exit 2; }

role="${1:-}"
master_url="${2:-}"
case "$role" in
  master) ;;
  worker|connect) [[ "$master_url" == spark://?* ]] || usage ;;
  *) usage ;;
esac

SPARK_HOME="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
export SPARK_HOME
export SPARK_NO_DAEMONIZE=1
host="${SPARK_NODE_HOST:-$(hostname)}"

case "$role" in
  master)
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "$host" \
      --port "${SPARK_MASTER_PORT:-7077}" \
      --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}"
    ;;
  worker)
    mkdir -p "${SPARK_WORKER_DIR:-/tmp/spark-work}"
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$host" \
      --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
      --cores "${SPARK_WORKER_CORES:-2}" \
      --memory "${SPARK_WORKER_MEMORY:-2g}" \
      --work-dir "${SPARK_WORKER_DIR:-/tmp/spark-work}" \
      "$master_url"
    ;;
  connect)
    exec "$SPARK_HOME/bin/spark-submit" \
      --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name "Spark Connect (kafka-runbooks)" \
      --master "$master_url" \
      --conf "spark.driver.host=$host" \
      --conf "spark.connect.grpc.binding.port=${SPARK_CONNECT_PORT:-15002}" \
      --conf "spark.sql.shuffle.partitions=${SPARK_CONNECT_SHUFFLE_PARTITIONS:-4}"
    ;;
esac
