package sparkbloom.formats.iceberg

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.formats.DmlFuzz

/**
 * The random DML fuzz ([[sparkbloom.formats.DmlFuzz]]) on Iceberg tables, copy-on-write and merge-on-read: MERGE,
 * UPDATE and DELETE by run-time keys and by literals, INSERTs and rewrite_data_files, each compared with the same
 * statement on an unindexed twin with sparkbloom off.
 */
class IcebergDmlFuzzSuite extends AnyFunSuite with IcebergSpark with DmlFuzz {
  override protected def formatConf(warehouse: String): Map[String, String] =
    super.formatConf(warehouse) + ("spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  override protected def variants: Seq[String] = Seq("copy-on-write", "merge-on-read")
  override protected def tableName(base: String): String = s"ice.db.$base"
  override protected def createTable(t: String, variant: String): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    sql(s"""CREATE TABLE $t (id BIGINT, k STRING, n BIGINT, v BIGINT) USING iceberg TBLPROPERTIES (
           |'format-version' = '2', 'write.distribution-mode' = 'none', 'write.delete.mode' = '$variant',
           |'write.update.mode' = '$variant', 'write.merge.mode' = '$variant')""".stripMargin)
  }
  override protected def compaction(t: String): String =
    s"CALL ice.system.rewrite_data_files(table => '${t.stripPrefix("ice.")}', options => " +
      "map('min-input-files', '2', 'target-file-size-bytes', '4096'))" // small files: some left to skip
  override protected def commits(t: String): (Long, Map[String, String]) = withIndexEnabled(on = false) {
    val count = sql(s"SELECT count(*) FROM $t.snapshots").head().getLong(0)
    val summary = sql(s"SELECT summary FROM $t.snapshots WHERE snapshot_id = " +
      s"(SELECT snapshot_id FROM $t.refs WHERE name = 'main')").collect()
    (count, summary.headOption.map(_.getAs[scala.collection.Map[String, String]](0).toMap).getOrElse(Map.empty))
  }
  /**
   * Iceberg's summary counts files' records, not a statement's rows: a copy-on-write DELETE's deleted-records are
   * all the records of the files it replaced, and a merge-on-read MERGE's added-position-deletes carry the earlier
   * deletes of the data files it touched. What the statement did is the difference: records added less records
   * removed (rows inserted less rows deleted, in both modes) and position deletes added less removed (rows
   * deleted or replaced, merge-on-read).
   */
  override protected def statementMetrics(all: Map[String, String]): Map[String, String] = {
    def n(m: String) = all.get(m).map(_.toLong).getOrElse(0L)
    Map("added-records - deleted-records" -> (n("added-records") - n("deleted-records")).toString,
      "added-position-deletes - removed-position-deletes" ->
        (n("added-position-deletes") - n("removed-position-deletes")).toString)
  }
  override protected def layoutMetrics(all: Map[String, String]): Map[String, String] =
    all.filter { case (m, _) =>
      Set("added-records", "deleted-records", "total-records", "deleted-data-files", "added-position-deletes",
        "removed-position-deletes", "total-position-deletes", "added-position-delete-files",
        "removed-position-delete-files", "added-equality-deletes", "removed-equality-deletes")(m)
    }
  override protected def defaultCases: Int = 4
  override protected def subqueryConditions: Boolean = true
  /**
   * Two forms Iceberg gets wrong by itself, with or without sparkbloom:
   *  - an insert-only MERGE fails on Spark 4.0 with Iceberg 1.10.1, without sparkbloom in the session
   *    ("[INTERNAL_ERROR] BUG: computeStats called before pushdown on DSv2 relation"), under every AQE and join
   *    setting;
   *  - a copy-on-write UPDATE with a subquery in its condition is Spark's union plan whose two branches share one
   *    Iceberg scan and, under AQE, narrow its files concurrently; `SparkCopyOnWriteScan.filter` is not thread-safe
   *    and the commit can then replace files whose rows were not all rewritten (apache/iceberg#18004, open; fix
   *    proposed in #18005). Seen once in this fuzz (the UPDATE after 16 other statements, AQE on): the indexed table
   *    lost 558 of 1,547 rows; not seen again in the runs after it. The race is in Iceberg's copy-on-write scan,
   *    which sparkbloom does not wrap, and the issue reproduces it without sparkbloom.
   */
  override protected def excludedForms(variant: String): Set[String] =
    Set("insert-only merge") ++ (if (variant == "copy-on-write") Set("update in", "update key in") else Set.empty)

  for ((variant, i) <- variants.zipWithIndex)
    test(s"random MERGE, UPDATE and DELETE on an Iceberg table ($variant) end as without sparkbloom") {
      dmlFuzz(variant, 20261128L + i)
    }
}
