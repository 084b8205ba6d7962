#!/usr/bin/env bash
# Compiles Kafka 2.4.1's own kafka.tools.StateChangeLogMerger, unchanged, for the side-by-side run of
# bench/bench_state_change_merge.py --kafka-merger. Kafka's source is not part of this project: give
# the path of core/src/main/scala/kafka/tools/StateChangeLogMerger.scala from a Kafka 2.4.1 checkout.
# It compiles with the Scala 2.13 compiler that PySpark ships (2.13 is one of 2.4.1's build targets),
# jopt-simple 5.0.4 (the version 2.4.1 uses) and the stand-ins beside this script for the five
# kafka.utils/Topic members the tool touches (usage printing, exit, duplicates, a logging trait, the
# legal topic characters). Prints the classpath to pass to --kafka-merger.
# Usage: bench/kafka_merger/build.sh /path/to/StateChangeLogMerger.scala OUT_DIR
set -euo pipefail
src=$1; out=$2
here=$(cd "$(dirname "$0")" && pwd)
jars=$(python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
jopt=${JOPT_SIMPLE_JAR:-$HOME/.m2/repository/net/sf/jopt-simple/jopt-simple/5.0.4/jopt-simple-5.0.4.jar}
[ -f "$jopt" ] || { echo "jopt-simple 5.0.4 jar not found: set JOPT_SIMPLE_JAR" >&2; exit 1; }
mkdir -p "$out"
javac -d "$out" "$here/Topic.java"
java -Xss4m -cp "$jars/scala-compiler-2.13.18.jar:$jars/scala-library-2.13.18.jar:$jars/scala-reflect-2.13.18.jar" \
  scala.tools.nsc.Main -usejavacp -nowarn -cp "$out:$jopt" -d "$out" "$src" "$here/Standins.scala"
echo "$out:$jopt:$jars/scala-library-2.13.18.jar"
