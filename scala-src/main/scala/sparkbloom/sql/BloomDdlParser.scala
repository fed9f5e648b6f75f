package sparkbloom.sql

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import sparkbloom.index.{ColumnSpec, IndexOptionParser, IndexedColumn, TableRef}

/**
 * The grammar of the bloom-index statements, by recursive descent. Every error is a ParseException
 * naming the token it is at; nothing runs until the whole statement has parsed.
 * {{{
 *   CREATE BLOOM INDEX [IF NOT EXISTS] name ON table (col [OPTIONS (...)], ...)
 *                                      [OPTIONS (false_reads_per_key = .. | fpp = .., ndv = ..)]
 *   DROP BLOOM INDEX [IF EXISTS] name ON table
 *   REFRESH BLOOM INDEX name ON table [FULL | INCREMENTAL]
 *   OPTIMIZE BLOOM INDEX name ON table
 *   VACUUM BLOOM INDEX name ON table [RETAIN number HOURS]
 *   SHOW BLOOM INDEXES ON table
 *   DESC[RIBE] BLOOM INDEX name ON table
 *   CREATE BLOOMFILTER INDEX ON [TABLE] table FOR COLUMNS (col [OPTIONS (fpp = .., numItems = ..)], ...) [OPTIONS
 * (...)]
 *     (Databricks' fpp is per file; false_reads_per_key is accepted too)
 *   DROP BLOOMFILTER INDEX ON [TABLE] table [FOR COLUMNS (col, ...)]
 *   SPARKBLOOM API method 'arguments as JSON'
 *     (the Python helpers' calls from a client without py4j, such as Spark Connect: see SparkBloomApiCommand)
 *
 *   table := identifier ('.' identifier)*  |  parquet.`/path`
 * }}}
 */
private[sql] object BloomDdlParser {
  def parse(sql: String): LogicalPlan = new BloomDdlParser(new TokenCursor(sql)).statement()
}

private final class BloomDdlParser(in: TokenCursor) {
  import IndexOptions.{DatabricksNdvKey, NativeNdvKey}

  def statement(): LogicalPlan = {
    val verb = in.next()
    val plan = verb.upper match {
      case "CREATE" if in.acceptWord("BLOOMFILTER") => databricksCreate()
      case "DROP" if in.acceptWord("BLOOMFILTER") => databricksDrop()
      case "CREATE" => in.expectWord("BLOOM"); create()
      case "DROP" => in.expectWord("BLOOM"); drop()
      case "REFRESH" => in.expectWord("BLOOM"); refresh()
      case "OPTIMIZE" =>
        in.expectWord("BLOOM"); in.expectWord("INDEX"); val n = indexName();
        OptimizeBloomIndexCommand(
          onTable(), n)
      case "VACUUM" => in.expectWord("BLOOM"); vacuum()
      case "SHOW" => in.expectWord("BLOOM"); show()
      case "DESC" | "DESCRIBE" => in.expectWord("BLOOM"); describe()
      case "SPARKBLOOM" => in.expectWord("API"); api()
      case _ => throw in.error(verb, "expected CREATE, DROP, REFRESH, OPTIMIZE, VACUUM, SHOW or DESCRIBE")
    }
    in.expectEnd()
    plan
  }

  private def create(): LogicalPlan = {
    in.expectWord("INDEX")
    val ifNotExists = ifPresent("NOT", "EXISTS")
    val name = indexName()
    val table = onTable()
    val columns = columnSpecs(NativeNdvKey)
    val options = tableOptions(NativeNdvKey)
    CreateBloomIndexCommand(table, name, columns, options.asMap, ifNotExists)
  }

  private def drop(): LogicalPlan = {
    in.expectWord("INDEX")
    val ifExists = ifPresent("EXISTS")
    val name = indexName()
    DropBloomIndexCommand(onTable(), name, ifExists)
  }

  private def refresh(): LogicalPlan = {
    in.expectWord("INDEX")
    val name = indexName()
    val table = onTable()
    val full = if (in.acceptWord("FULL")) true else { in.acceptWord("INCREMENTAL"); false }
    RefreshBloomIndexCommand(table, name, full)
  }

  private def vacuum(): LogicalPlan = {
    in.expectWord("INDEX")
    val name = indexName()
    val table = onTable()
    val retain = if (in.acceptWord("RETAIN")) {
      val t = in.next()
      val hours = if (t.kind == TokenKind.Number) scala.util.Try(t.text.toDouble).toOption else None
      if (hours.forall(h => h < 0 || h.isInfinite)) throw in.error(t, "expected a number of hours, 0 or more")
      in.expectWord("HOURS")
      hours
    } else None
    VacuumBloomIndexCommand(table, name, retain)
  }

  private def show(): LogicalPlan = {
    in.expectWord("INDEXES")
    ShowBloomIndexesCommand(onTable())
  }

  private def describe(): LogicalPlan = {
    in.expectWord("INDEX")
    val name = indexName()
    DescribeBloomIndexCommand(onTable(), name)
  }

  private def api(): LogicalPlan = {
    val method = in.identifier("a sparkbloom API method").text
    val arguments = in.next()
    if (arguments.kind != TokenKind.Str) throw in.error(arguments, "expected the arguments as a JSON string")
    SparkBloomApiCommand(method, arguments.text)
  }

  private def databricksCreate(): LogicalPlan = {
    val table = databricksTable()
    in.expectWord("FOR")
    in.expectWord("COLUMNS")
    val columns = columnSpecs(DatabricksNdvKey)
    val options = tableOptions(DatabricksNdvKey)
    CreateBloomIndexCommand(table, DropBloomFilterColumnsCommand.IndexName, columns,
      options.asMap + (IndexOptionParser.FppScopeKey -> IndexedColumn.FileScope), ifNotExists = false)
  }

  private def databricksDrop(): LogicalPlan = {
    val table = databricksTable()
    if (in.acceptWord("FOR")) {
      in.expectWord("COLUMNS")
      DropBloomFilterColumnsCommand(table, distinctColumns(in.parenthesised(columnName())).map(_.text))
    } else {
      DropBloomIndexCommand(table, DropBloomFilterColumnsCommand.IndexName, ifExists = false)
    }
  }

  /** `INDEX ON [TABLE] t`: TABLE is a keyword only when a table name follows it. */
  private def databricksTable(): TableRef = {
    in.expectWord("INDEX")
    in.expectWord("ON")
    if (in.peek.isWord("TABLE") && in.peekAt(1).isIdentifier && !in.peekAt(1).isWord("FOR")) in.next()
    tableRef()
  }

  /** `IF NOT EXISTS` / `IF EXISTS`; IF directly followed by ON is an index name instead. */
  private def ifPresent(words: String*): Boolean =
    if (in.peek.isWord("IF") && !in.peekAt(1).isWord("ON")) {
      in.next()
      words.foreach(in.expectWord)
      true
    } else false

  private def indexName(): String = {
    // An unquoted ON here means the name was left out, unless ON itself is the name ("INDEX on ON t").
    if (in.peek.isWord("ON") && !in.peekAt(1).isWord("ON")) throw in.error(in.peek, "expected an index name")
    in.identifier("an index name").text
  }

  private def onTable(): TableRef = {
    in.expectWord("ON")
    tableRef()
  }

  /** A catalog table (`t`, `db.t`, `cat.db.t`, parts may be back-quoted) or a path table parquet.`/p`. */
  private def tableRef(): TableRef = {
    val first = in.identifier("a table name or parquet.`path`")
    if (first.isWord("parquet") && in.peek.isSymbol(".") && in.peekAt(1).kind == TokenKind.Quoted &&
      !in.peekAt(2).isSymbol(".")) {
      in.next()
      val path = in.next()
      if (path.text.trim.isEmpty) throw in.error(path, "the path is empty")
      TableRef.Path(path.text)
    } else {
      val parts = Seq.newBuilder[String]
      parts += first.text
      while (in.acceptSymbol(".")) parts += in.identifier("a name part after '.'").text
      TableRef.Catalog(parts.result().map(quoteIfNeeded).mkString("."))
    }
  }

  private def columnSpecs(ndvKey: String): Seq[ColumnSpec] = {
    val specs = in.parenthesised {
      val name = columnName()
      val options = if (in.acceptWord("OPTIONS")) IndexOptions.parse(in, ndvKey) else IndexOptions()
      if (options.maintainOnWrite.isDefined)
        throw in.error(name, s"${IndexOptions.MaintainKey} is an option of the whole index, not of column ${name.text}")
      (name, ColumnSpec(name.text, options.fpp, options.ndv, options.falseReadsPerKey))
    }
    distinctColumns(specs.map(_._1))
    specs.map(_._2)
  }

  private def columnName(): Token = {
    val name = in.identifier("a column name")
    if (in.peek.isSymbol(".")) throw in.error(in.peek, "nested columns cannot be indexed; name a top-level column")
    name
  }

  /** Column names compare case-insensitively here; the facade resolves them against the table. */
  private def distinctColumns(names: Seq[Token]): Seq[Token] = {
    names.zipWithIndex.foreach { case (t, i) =>
      if (names.take(i).exists(_.text.equalsIgnoreCase(t.text))) throw in.error(t, s"column ${t.text} is listed twice")
    }
    names
  }

  private def tableOptions(ndvKey: String): IndexOptions =
    if (in.acceptWord("OPTIONS")) IndexOptions.parse(in, ndvKey) else IndexOptions()

  /** As Spark writes a multi-part name: back-quotes only around parts that need them. */
  private def quoteIfNeeded(part: String): String =
    if (part.matches("[a-zA-Z0-9_]+") && !part.matches("[0-9]+")) part
    else "`" + part.replace("`", "``") + "`"
}
