package sparkbloom.sbbf

/** PLACEHOLDER (scalar only) until the vector run probe lands: tests one hash against m consecutive blocks. */
object RunProbe {
  private val Salts = Array(0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31)

  def probeRun(run: Array[Byte], offset: Int, m: Int, hash: Long, out: Array[Long]): Unit = {
    val x = hash.toInt
    val mask = Salts.map(s => 1 << ((x * s) >>> 27))
    val bb = java.nio.ByteBuffer.wrap(run).order(java.nio.ByteOrder.LITTLE_ENDIAN)
    var j = 0
    while (j < m) {
      var ok = true; var w = 0
      while (ok && w < 8) { ok = (bb.getInt(offset + 32 * j + 4 * w) & mask(w)) == mask(w); w += 1 }
      if (ok) out(j >>> 6) |= 1L << j
      j += 1
    }
  }
}
