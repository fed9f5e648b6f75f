package sparkbloom.sbbf

import java.nio.ByteOrder

import jdk.incubator.vector.{ByteVector, IntVector, VectorOperators, VectorSpecies}

/**
 * [[RunProbe]] on the JDK Vector API: a block is one 256-bit vector, tested as the per-filter
 * [[VectorKernel]] tests it (AND with the mask, compare to the mask), with the mask built once per call.
 * Loaded only through [[RunProbe.vector]], which checks it against [[ScalarRunProbe]].
 *
 * Blocks are loaded as 32 bytes and reinterpreted as 8 ints. `IntVector.fromByteArray(.., LITTLE_ENDIAN)`
 * would say the byte order out loud, but it exists only in JDK 17-18 (JDK 19 replaced it with memory
 * segments), and Spark 4 runs on 17 and 21; `ByteVector.fromArray` exists in every release with the
 * module. The reinterpretation is in native order, hence the little-endian requirement below.
 */
object VectorRunProbe extends RunProbe {
  private val Ints: VectorSpecies[Integer] = IntVector.SPECIES_256
  private val Bytes: VectorSpecies[java.lang.Byte] = ByteVector.SPECIES_256
  private val Salts: IntVector = IntVector.fromArray(Ints, Kernel.Salt, 0)
  private val Ones: IntVector = IntVector.broadcast(Ints, 1)
  require(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "blocks are reinterpreted in native byte order")
  // On a platform whose vectors are narrower (e.g. 128-bit NEON), 256-bit ones are emulated and slower
  // than the scalar probe.
  require(IntVector.SPECIES_PREFERRED.vectorBitSize() >= 256, "256-bit vectors are not accelerated here")

  def name = "vector"

  def probeRun(run: Array[Byte], offset: Int, m: Int, hash: Long, out: Array[Long]): Unit = {
    RunProbe.checkArgs(run, offset, m, out)
    val mask = Ones.lanewise(VectorOperators.LSHL,
      IntVector.broadcast(Ints, hash.toInt).mul(Salts).lanewise(VectorOperators.LSHR, 27))
    var j = 0
    while (j < m) {
      val end = math.min(m, j + 64)
      var acc = 0L
      while (j < end) {
        val block = ByteVector.fromArray(Bytes, run, offset + (j << 5)).reinterpretAsInts()
        // As in the scalar probe: block j's bit enters at the top, so the loop shifts only by constants.
        // (`VectorMask.toLong` would avoid the select, but JDK 17 does not intrinsify it: 24 B and 10 ns a block.)
        acc = (acc >>> 1) | (if (block.and(mask).eq(mask).allTrue()) Long.MinValue else 0L)
        j += 1
      }
      out((j - 1) >>> 6) |= acc >>> ((64 - (j & 63)) & 63)
    }
  }
}
