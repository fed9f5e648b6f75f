package sparkbloom.api

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

import sparkbloom.index.{BloomIndexException, ColumnSpec, IndexDescription, ScanSkipping, TableRef}
import sparkbloom.scan.{BloomScanMetricsExec, ExecutedScans, SkippingReport}

/**
 * What the Python package calls over py4j. Arguments are plain (String, String[], nullable boxed
 * numbers), results are JSON strings, and every call goes straight to the same facade as the SQL
 * statements ([[BloomIndexes]], [[SkippingReport]]): nothing is decided twice.
 *
 * A `tableOrPath` string names a path when it contains '/', starts with `file:`, `hdfs:` or `s3(a|n):`,
 * or is written parquet.`/path`; anything else is a catalog table name.
 */
object PythonApi {

  /** `df.bloomFilterIndex(...)`: the index over the Parquet files behind `df`, created or brought up to date. */
  def createForDataFrame(df: DataFrame, columns: Array[String], name: String,
                         fpp: java.lang.Double, ndv: java.lang.Long, falseReadsPerKey: java.lang.Double,
                         maintainOnWrite: java.lang.Boolean): String = {
    if (columns == null || columns.isEmpty) throw new BloomIndexException("A bloom index needs at least one column.")
    // Refuses anything but a plain Parquet scan and computed columns, before any work.
    val DataFrameTable.Target(table, fileColumns) = DataFrameTable.target(df, columns.toSeq)
    val spark = df.sparkSession
    val indexName = Option(name).getOrElse(defaultName(fileColumns))
    val options = Seq(
      Option(fpp).map(f => "fpp" -> f.toString), Option(ndv).map(n => "ndv" -> n.toString),
      Option(falseReadsPerKey).map(b => BloomIndexes.FalseReadsPerKeyKey -> b.toString),
      Option(maintainOnWrite).map(m => BloomIndexes.MaintainOnWriteKey -> m.toString)).flatten.toMap
    val existing = BloomIndexes.list(spark, table).find(_.name.equalsIgnoreCase(indexName))
    val description = existing match {
      case None =>
        BloomIndexes.create(spark, table, indexName, fileColumns.map(ColumnSpec(_)), options, ifNotExists = true)
      case Some(d) =>
        if (d.columns.map(_.name.toLowerCase) != fileColumns.map(_.toLowerCase))
          throw new BloomIndexException(s"Bloom index ${d.name} on ${table.display} already exists on columns " +
            s"(${d.columns.map(_.name).mkString(", ")}), not (${fileColumns.mkString(", ")}): drop it or choose " +
            "another name.")
        if (d.filesNotCovered > 0 || d.filesDeleted > 0) BloomIndexes.refresh(spark, table, d.name, full = false) else d
    }
    Json.write(describeJson(table, description))
  }

  def list(spark: SparkSession, tableOrPath: String): String = {
    val table = tableRef(tableOrPath)
    Json.write(BloomIndexes.list(spark, table).map(describeJson(table, _)))
  }

  def describe(spark: SparkSession, tableOrPath: String, name: String): String = {
    val table = tableRef(tableOrPath)
    Json.write(describeJson(table, BloomIndexes.describe(spark, table, name, verify = true)))
  }

  def refresh(spark: SparkSession, tableOrPath: String, name: String, full: Boolean): String = {
    val table = tableRef(tableOrPath)
    Json.write(describeJson(table, BloomIndexes.refresh(spark, table, name, full)))
  }

  def drop(spark: SparkSession, tableOrPath: String, name: String, ifExists: Boolean): Boolean =
    BloomIndexes.drop(spark, tableRef(tableOrPath), name, ifExists)

  /** What the bloom indexes did for `df`'s scans; meaningful after the query ran. */
  def skipping(df: DataFrame): String =
    Json.write(SkippingReport.forPlan(df.queryExecution.executedPlan).map(skippingJson))

  /** Every file scan in `df`'s executed plan with Spark's own metrics (files read, rows output, ...). */
  def scans(df: DataFrame): String = Json.write(Scans.of(df.queryExecution.executedPlan))

  /** `python -m sparkbloom inspect`: see [[Inspector]]. */
  def inspect(spark: SparkSession, path: String, probes: Array[String]): String =
    Inspector.inspect(spark.sparkContext.hadoopConfiguration, path, probes)

  /** What `bloomFilterIndex(columns)` would index, without indexing: {"table_ref", "columns"} (file column names). */
  def indexTarget(df: DataFrame, columns: Array[String]): String = {
    val t = DataFrameTable.target(df, columns.toSeq)
    Json.write(Json.obj("table_ref" -> tableString(t.table), "columns" -> t.columns))
  }

  /**
   * One call by name with JSON arguments, answered in JSON: what `SPARKBLOOM API method 'json'` runs, for a client
   * with no py4j gateway (Spark Connect). The same methods as above; a DataFrame travels as a temporary view
   * (`view`) of the client's session, and the skipping of a query that ran comes from the metrics the client
   * received plus the names [[ExecutedScans]] kept for its nodes (`scans`).
   */
  def call(spark: SparkSession, method: String, arguments: String): String = {
    val args = Json.read(arguments)
    def opt(key: String) = Option(args.get(key)).filterNot(_.isNull)
    def str(key: String): String = opt(key).map(_.asText).getOrElse(
      throw new IllegalArgumentException(s"sparkbloom API $method: the argument '$key' is missing"))
    def strings(key: String): Array[String] = opt(key).toSeq.flatMap(a => (0 until a.size).map(a.get(_).asText)).toArray
    method.toLowerCase(java.util.Locale.ROOT) match {
      case "create" =>
        createForDataFrame(spark.table(str("view")), strings("columns"), opt("name").map(_.asText).orNull,
          opt("fpp").map(n => java.lang.Double.valueOf(n.asDouble)).orNull,
          opt("ndv").map(n => java.lang.Long.valueOf(n.asLong)).orNull,
          opt("false_reads_per_key").map(n => java.lang.Double.valueOf(n.asDouble)).orNull,
          opt("maintain_on_write").map(n => java.lang.Boolean.valueOf(n.asBoolean)).orNull)
      case "list" => list(spark, str("table"))
      case "describe" => describe(spark, str("table"), str("name"))
      case "refresh" => refresh(spark, str("table"), str("name"), opt("full").exists(_.asBoolean))
      case "drop" => Json.write(drop(spark, str("table"), str("name"), opt("if_exists").exists(_.asBoolean)))
      case "inspect" => inspect(spark, str("path"), strings("probes"))
      case "scans" =>
        val ids = opt("plan_ids").toSeq.flatMap(a => (0 until a.size).map(a.get(_).asInt))
        Json.write(ExecutedScans.of(spark, ids).map { case (id, r) =>
          Json.obj("plan_id" -> id, "scan_table" -> r.scanTable, "scan_format" -> r.scanFormat,
            "skipping" -> r.skipping.map(skippingJson).orNull)
        })
      case other => throw new IllegalArgumentException(s"Unknown sparkbloom API method '$other' (known: create, " +
          "list, describe, refresh, drop, inspect, scans)")
    }
  }

  private val PathSyntax = """(?is)parquet\.`(.+)`""".r
  private val PathPrefix = """(?i)(file|hdfs|s3[an]?):.*""".r

  def tableRef(tableOrPath: String): TableRef = {
    if (tableOrPath == null || tableOrPath.trim.isEmpty) throw new BloomIndexException("No table or path given.")
    tableOrPath.trim match {
      case PathSyntax(p) => TableRef.Path(p)
      case p if p.contains('/') => TableRef.Path(p)
      case p @ PathPrefix(_) => TableRef.Path(p)
      case t => TableRef.Catalog(t)
    }
  }

  private def tableString(t: TableRef): String = t match {
    case TableRef.Catalog(n) => n
    case TableRef.Path(p) => if (p.contains('/') || PathPrefix.pattern.matcher(p).matches()) p else s"parquet.`$p`"
  }

  /** bloom_<columns>: lower case, anything but letters and digits as '_'. */
  private def defaultName(
      columns: Seq[String]): String = ("bloom_" + columns.mkString("_")).toLowerCase.replaceAll("[^a-z0-9_]", "_")

  private def describeJson(table: TableRef, d: IndexDescription) = Json.obj(
    "name" -> d.name,
    "table" -> d.table,
    "table_ref" -> tableString(table),
    "location" -> d.location,
    "columns" -> d.columns.map(c =>
      Json.obj("name" -> c.name, "fpp" -> c.fpp, "ndv" -> c.ndv,
        "false_reads_per_key" -> c.falseReadsPerKey)),
    "fpp" -> d.fpp,
    "ndv" -> d.ndv,
    "false_reads_per_key" -> d.falseReadsPerKey,
    "maintain_on_write" -> d.maintainOnWrite,
    "max_bits_per_value" -> d.maxBitsPerValue,
    "column_stats" -> d.columnStats.zipWithIndex.map { case (s, i) =>
      Json.obj(
        "column" -> s.column,
        "sizing" -> d.policies.lift(i).orNull,
        "row_groups" -> s.rowGroups,
        "size_in_bytes" -> s.sizeInBytes,
        "distinct_values" -> s.distinctValues,
        "bytes_per_value" -> s.bytesPerValue,
        "expected_false_reads_per_key" -> s.expectedFalseReadsPerKey,
        "expected_false_reads_per_present_key" -> s.expectedFalseReadsPerPresentKey,
        "row_groups_at_ceiling" -> s.rowGroupsAtCeiling)
    },
    "version" -> d.version, "versions_kept" -> d.versions, "segment_files" -> d.segments,
    "commit_safety" -> d.commitSafety,
    "created_at_millis" -> d.createdAtMillis,
    "files_covered" -> d.filesCovered,
    "row_groups_covered" -> d.rowGroupsCovered,
    "filters_harvested" -> d.filtersHarvested,
    "filters_scanned" -> d.filtersScanned,
    "size_in_bytes" -> d.sizeInBytes, "layout" -> d.levels,
    "files_in_table" -> d.filesInTable,
    "files_not_covered" -> d.filesNotCovered,
    "files_deleted" -> d.filesDeleted,
    "table_version_covered" -> d.snapshotCovered.orNull,
    "table_version_now" -> d.snapshotNow.orNull,
    "usage" -> Json.obj("lookups" -> d.usage.lookups, "files_skipped" -> d.usage.filesSkipped,
      "row_groups_skipped" -> d.usage.rowGroupsSkipped, "index_bytes_read" -> d.usage.indexBytesRead,
      "probe_time_ms" -> d.usage.probeTimeNs / 1e6),
    "problems" -> d.problems)

  private def skippingJson(s: ScanSkipping) = Json.obj(
    "index" -> s.index,
    "table" -> s.table,
    "predicate" -> s.predicate,
    "files_total" -> s.filesTotal,
    "files_kept" -> s.filesKept,
    "row_groups_total" -> s.rowGroupsTotal,
    "row_groups_kept" -> s.rowGroupsKept,
    "files_not_covered" -> s.filesNotCovered,
    "index_bytes_read" -> s.indexBytesRead,
    "probe_time_ms" -> s.probeTimeNs / 1e6,
    "distributed_probe" -> s.distributedProbe,
    "keys_probed" -> s.keysProbed,
    "native_row_groups_checked" -> s.nativeRowGroupsChecked,
    "native_row_groups_skipped" -> s.nativeRowGroupsSkipped,
    "native_filters_invalid" -> s.nativeFiltersInvalid)

  /**
   * Every file scan: V1 (`FileSourceScanExec`: Parquet, Delta) and V2 (`BatchScanExec`: the V2 Parquet scan,
   * Iceberg), each with Spark's (and the source's) own metrics and, where a bloom index or native filters
   * pruned it, sparkbloom's SQL metrics (`bloom_metrics`: filesSkipped, rowGroupsSkipped, ...).
   */
  private object Scans extends AdaptiveSparkPlanHelper {
    def of(plan: SparkPlan): Seq[java.util.Map[String, AnyRef]] = {
      val bloom = collect(plan) { case b: BloomScanMetricsExec => b }
      def metrics(p: SparkPlan) = Json.obj(p.metrics.toSeq.sortBy(_._1).map { case (k, m) => k -> m.value }: _*)
      def scan(p: SparkPlan, table: String, format: String) = Json.obj("table" -> table, "format" -> format,
        "metrics" -> metrics(p), "bloom_metrics" -> bloom.find(_.child eq p).map(metrics).orNull)
      collect(plan) {
        case s @ (_: FileSourceScanExec | _: org.apache.spark.sql.execution.datasources.v2.BatchScanExec) =>
          val (table, format) = SkippingReport.scanOf(s).get
          scan(s, table, format)
      }
    }
  }
}
