package sparkbloom.sql

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkSqlParser
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.{ColumnSpec, TableRef}
import sparkbloom.index.TableRef.{Catalog, Path}

/** Every statement form, parsed without a session, into the command it runs. */
class BloomStatementsSuite extends AnyFunSuite {
  private val parser = new BloomSqlParser(new SparkSqlParser())
  /** The plan with the output attributes left out, so that it compares equal to an expected command. */
  private def parse(sql: String): LogicalPlan = parser.parsePlan(sql) match {
    case c: CreateBloomIndexCommand => c.copy(output = Nil)
    case c: RefreshBloomIndexCommand => c.copy(output = Nil)
    case c: ShowBloomIndexesCommand => c.copy(output = Nil)
    case c: DescribeBloomIndexCommand => c.copy(output = Nil)
    case other => other
  }
  private val t = Catalog("t")

  private def create(sql: String): CreateBloomIndexCommand = parse(sql) match {
    case c: CreateBloomIndexCommand => c
    case other => fail(s"expected CreateBloomIndexCommand, got $other")
  }

  test("CREATE BLOOM INDEX with one column and no options") {
    val c = create("CREATE BLOOM INDEX idx ON t (user_id)")
    assert((c.table, c.name, c.columns, c.options, c.ifNotExists) ==
      ((t, "idx", Seq(ColumnSpec("user_id")), Map.empty[String, String], false)))
  }

  test("CREATE BLOOM INDEX IF NOT EXISTS with column and table options") {
    val c = create(
      "CREATE BLOOM INDEX IF NOT EXISTS idx ON db.t (a OPTIONS (fpp = 0.001, ndv = 500), b, c OPTIONS (ndv = 7)) " +
        "OPTIONS (fpp = 0.05, ndv = 1000000)")
    assert(c.ifNotExists)
    assert(c.table == Catalog("db.t"))
    assert(c.columns == Seq(ColumnSpec("a", Some(0.001), Some(500L)), ColumnSpec("b"), ColumnSpec("c", None, Some(7L))))
    assert(c.options == Map("fpp" -> "0.05", "ndv" -> "1000000"))
  }

  test("keywords, option keys and the table name keep working in any case") {
    val c = create("create Bloom index Idx on Db.T (Col options (FPP = 0.1, NdV = 10)) Options (Fpp = 0.2)")
    assert((c.name, c.table, c.columns, c.options) ==
      (("Idx", Catalog("Db.T"), Seq(ColumnSpec("Col", Some(0.1), Some(10L))), Map("fpp" -> "0.2"))))
  }

  test("option values may be strings, signed, in exponent form or carry a Spark literal suffix") {
    val c = create(
      "CREATE BLOOM INDEX i ON t (a OPTIONS ('fpp' = '0.01', `ndv` = \"1e6\"), b OPTIONS (fpp = +.5, ndv = 100L))")
    assert(c.columns == Seq(ColumnSpec("a", Some(0.01), Some(1000000L)), ColumnSpec("b", Some(0.5), Some(100L))))
  }

  test("an index named IF, ON or with back-quotes is still a name") {
    assert(create("CREATE BLOOM INDEX if ON t (a)").name == "if")
    assert(create("CREATE BLOOM INDEX on ON t (a)").name == "on")
    assert(create("CREATE BLOOM INDEX `my index` ON t (a)").name == "my index")
    assert(parse("DROP BLOOM INDEX if ON t") == DropBloomIndexCommand(t, "if", ifExists = false))
  }

  test("table names: one, two, three parts, back-quoted parts re-quoted only where needed") {
    def table(name: String): TableRef = create(s"CREATE BLOOM INDEX i ON $name (a)").table
    assert(table("events") == Catalog("events"))
    assert(table("db.events") == Catalog("db.events"))
    assert(table("spark_catalog.db.events") == Catalog("spark_catalog.db.events"))
    assert(table("`db`.`events`") == Catalog("db.events"))
    assert(table("`my db`.`a.b`") == Catalog("`my db`.`a.b`"))
    assert(table("db.`odd``name`") == Catalog("db.`odd``name`"))
    assert(table("`123`") == Catalog("`123`"))
  }

  test("parquet.`path` is a path table; a longer name starting with parquet is a catalog table") {
    def table(name: String): TableRef = create(s"CREATE BLOOM INDEX i ON $name (a)").table
    assert(table("parquet.`/data/events`") == Path("/data/events"))
    assert(table("PARQUET.`s3a://bucket/with space/x`") == Path("s3a://bucket/with space/x"))
    assert(table("parquet.events") == Catalog("parquet.events"))
    assert(table("`parquet`.`events`") == Catalog("parquet.events"))
    assert(table("parquet.`db`.events") == Catalog("parquet.db.events"))
  }

  test("column names may be back-quoted and keep their case") {
    val c = create("CREATE BLOOM INDEX i ON t (`Weird Col`, `a.b`, UserId)")
    assert(c.columns.map(_.name) == Seq("Weird Col", "a.b", "UserId"))
  }

  test("leading white space and comments, trailing semicolons and comments are allowed") {
    val sql = "  -- build it\n /* a /* nested */ comment */ CREATE /* x */ BLOOM\nINDEX i ON t (a) ; ; -- done"
    assert(create(sql).name == "i")
  }

  test("DROP BLOOM INDEX with and without IF EXISTS") {
    assert(parse("DROP BLOOM INDEX i ON t") == DropBloomIndexCommand(t, "i", ifExists = false))
    assert(parse("drop bloom index if exists i on parquet.`/p`") == DropBloomIndexCommand(Path("/p"), "i",
      ifExists = true))
  }

  test("REFRESH BLOOM INDEX is incremental unless FULL is given") {
    assert(parse("REFRESH BLOOM INDEX i ON t") == RefreshBloomIndexCommand(t, "i", full = false, Nil))
    assert(parse("REFRESH BLOOM INDEX i ON t INCREMENTAL") == RefreshBloomIndexCommand(t, "i", full = false, Nil))
    assert(parse("refresh bloom index i on t full") == RefreshBloomIndexCommand(t, "i", full = true, Nil))
  }

  test("SHOW BLOOM INDEXES") {
    assert(parse("SHOW BLOOM INDEXES ON db.t") == ShowBloomIndexesCommand(Catalog("db.t"), Nil))
    assert(parse("show bloom indexes on parquet.`/x`") == ShowBloomIndexesCommand(Path("/x"), Nil))
  }

  test("DESCRIBE and DESC BLOOM INDEX") {
    assert(parse("DESCRIBE BLOOM INDEX i ON t") == DescribeBloomIndexCommand(t, "i", Nil))
    assert(parse("desc bloom index `i` on t") == DescribeBloomIndexCommand(t, "i", Nil))
  }

  test("Databricks' CREATE BLOOMFILTER INDEX makes the index `bloomfilter`, numItems being ndv") {
    val c = create("CREATE BLOOMFILTER INDEX ON TABLE db.t FOR COLUMNS(a OPTIONS (fpp = 0.1, numItems = 5000000), b)")
    assert((c.table, c.name, c.ifNotExists) == ((Catalog("db.t"), "bloomfilter", false)))
    assert(c.columns == Seq(ColumnSpec("a", Some(0.1), Some(5000000L)), ColumnSpec("b")))
    val withoutTable = create("create bloomfilter index on t for columns (a) options (NUMITEMS = 10, fpp = 0.2)")
    assert(withoutTable.table == t)
    // Databricks' fpp is per file: the facade is told so
    assert(withoutTable.options == Map("fpp" -> "0.2", "ndv" -> "10", "sparkbloom.fpp_scope" -> "file"))
  }

  test("Databricks' TABLE keyword is optional, so a table may be called `table`") {
    assert(create("CREATE BLOOMFILTER INDEX ON table FOR COLUMNS(a)").table == Catalog("table"))
    assert(create("CREATE BLOOMFILTER INDEX ON TABLE table FOR COLUMNS(a)").table == Catalog("table"))
    assert(create("CREATE BLOOMFILTER INDEX ON table.x FOR COLUMNS(a)").table == Catalog("table.x"))
  }

  test("Databricks' DROP BLOOMFILTER INDEX drops the index, or only the listed columns") {
    assert(parse("DROP BLOOMFILTER INDEX ON TABLE t") == DropBloomIndexCommand(t, "bloomfilter", ifExists = false))
    assert(parse("drop bloomfilter index on parquet.`/p`") == DropBloomIndexCommand(Path("/p"), "bloomfilter", false))
    assert(parse("DROP BLOOMFILTER INDEX ON t FOR COLUMNS(a, `B c`)") == DropBloomFilterColumnsCommand(t,
      Seq("a", "B c")))
  }

  test("each command gets fresh output attributes with the documented names") {
    def parse(sql: String): LogicalPlan = parser.parsePlan(sql)
    val a = parse("SHOW BLOOM INDEXES ON t")
    val b = parse("SHOW BLOOM INDEXES ON t")
    assert(a.output.map(_.name) == Seq("name", "columns", "fpp", "ndv", "version", "files_covered",
      "row_groups_covered", "size_in_bytes", "files_not_covered", "false_reads_per_key"))
    assert(a.output.map(_.exprId).intersect(b.output.map(_.exprId)).isEmpty)
    assert(parse("DESCRIBE BLOOM INDEX i ON t").output.map(_.name) == Seq("info_name", "info_value"))
    val summary = Seq("name", "version", "files_indexed", "row_groups_indexed", "size_in_bytes")
    assert(parse("CREATE BLOOM INDEX i ON t (a)").output.map(_.name) == summary)
    assert(parse("REFRESH BLOOM INDEX i ON t").output.map(_.name) == summary)
    assert(parse("DROP BLOOM INDEX i ON t").output.isEmpty)
  }
}
