package sparkbloom.index

import sparkbloom.encoding.SparkEncodings
import sparkbloom.sbbf.Sizing

/** The columns of a table an index names, checked against the table and resolved to how its files know them. */
object IndexColumns {
  /**
   * An indexed column kept by the files' identity of it (Delta physical name, Iceberg field id), whatever it
   * is called now: a renamed column keeps its index. None for columns found by name.
   */
  def stillThere(t: ResolvedTable, c: IndexedColumn): Option[IndexedColumn] =
    if (c.fileName.isEmpty && c.fieldId.isEmpty) None
    else t.dataSchema.fields.find { f =>
      val (n, id) = t.fileColumn(f); c.sameColumn(n.getOrElse(f.name), id)
    } match {
      case Some(f) if f.dataType.sql == c.dataType => Some(c)
      case _ =>
        throw new BloomIndexException(s"Indexed column ${c.name} of bloom index on ${t.display} is no longer in " +
          s"the table (or its type changed): drop the index or its column")
    }

  def resolve(t: ResolvedTable, specs: Seq[ColumnSpec], opts: TableOptions): Seq[IndexedColumn] = {
    if (specs.isEmpty) throw new BloomIndexException("A bloom index needs at least one column")
    val dupes = specs.groupBy(_.name.toLowerCase).collect { case (n, s) if s.size > 1 => n }
    if (dupes.nonEmpty) throw new BloomIndexException(s"Column ${dupes.head} is listed more than once")
    specs.map { s =>
      if (t.partitionColumns.exists(_.equalsIgnoreCase(s.name)))
        throw new BloomIndexException(
          s"Column ${s.name} is a partition column of ${t.display}; partition pruning already skips on it")
      val field = t.dataSchema.fields.find(_.name == s.name).orElse(
        t.dataSchema.fields.find(_.name.equalsIgnoreCase(s.name)))
        .getOrElse(
          throw new BloomIndexException(s"Column ${s.name} does not exist in ${t.display}; available columns: " +
            t.dataSchema.fieldNames.mkString(", ")))
      if (!SparkEncodings.indexable(field.dataType))
        throw new BloomIndexException(
          s"Cannot index column ${field.name}: ${SparkEncodings.unsupportedReason(field.dataType)}")
      s.fpp.foreach(f =>
        if (!(f > 0 && f < 1))
          throw new BloomIndexException(s"Option fpp of column ${s.name} must be in (0, 1), got $f"))
      s.ndv.foreach(n =>
        if (n <= 0) throw new BloomIndexException(s"Option ndv of column ${s.name} must be a positive integer, got $n"))
      s.falseReadsPerKey.foreach(b =>
        if (!(b > 0) || b.isInfinite)
          throw new BloomIndexException(
            s"Option $IndexOptionParser.FalseReadsPerKeyKey of column ${s.name} must be a positive number, got $b"))
      if (s.fpp.isDefined && s.falseReadsPerKey.isDefined)
        throw new BloomIndexException(
          s"Column ${s.name}: give either fpp or $IndexOptionParser.FalseReadsPerKeyKey, not both")
      // The column's own choice wins, then the index's.
      val fpp = s.fpp.orElse(if (s.falseReadsPerKey.isDefined) None else opts.fpp)
      val budget = if (fpp.isDefined) None else s.falseReadsPerKey.orElse(opts.falseReadsPerKey)
      fpp.foreach(Sizing.checkFpp)
      val (fileName, fieldId) = t.fileColumn(field)
      IndexedColumn(field.name, field.dataType.sql, fpp, s.ndv.orElse(opts.ndv), budget,
        if (fpp.isDefined && opts.fppPerFile) Some(IndexedColumn.FileScope) else None, fileName, fieldId)
    }
  }
}
