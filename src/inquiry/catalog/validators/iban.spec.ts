import { describe, it, expect } from '@jest/globals';
import { isValidIBAN } from 'ibantools';
import { normaliseIban } from './iban.js';

const fa = (s: string) => s.replace(/[0-9]/g, (d) => '۰۱۲۳۴۵۶۷۸۹'[Number(d)]);
const ar = (s: string) => s.replace(/[0-9]/g, (d) => '٠١٢٣٤٥٦٧٨٩'[Number(d)]);

/** Independent ISO 13616 / ISO 7064 mod-97-10 check. */
function referenceMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  const digits = rearranged.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  return Number(BigInt(digits) % 97n);
}

const VALID = ['IR820540102680020817909002', 'IR062960000000100324200001', 'IR580540105180021273113007'];
const friendly = (iban: string) => iban.replace(/(.{4})/g, '$1 ').trim();

describe('normaliseIban', () => {
  it.each(VALID)('accepts %s', (iban) => {
    expect(referenceMod97(iban)).toBe(1);
    expect(normaliseIban(iban)).toBe(iban);
  });

  it.each(VALID)('accepts %s friendly-formatted, lower case, padded', (iban) => {
    expect(normaliseIban(friendly(iban))).toBe(iban);
    expect(normaliseIban(iban.toLowerCase())).toBe(iban);
    expect(normaliseIban(`  ${friendly(iban).toLowerCase()}\t`)).toBe(iban);
    expect(normaliseIban('ir' + iban.slice(2))).toBe(iban);
    expect(normaliseIban('Ir' + iban.slice(2))).toBe(iban);
  });

  it.each(VALID)('accepts %s with Persian and Arabic-Indic digits', (iban) => {
    expect(normaliseIban(fa(iban))).toBe(iban);
    expect(normaliseIban(ar(friendly(iban)))).toBe(iban);
  });

  it("decides as ibantools' isValidIBAN", () => {
    // Every pair of check digits (00, 01, 98 and 99 included) over the valid BBANs and 40 more.
    const bbans = VALID.map((iban) => iban.slice(4));
    let seed = 7;
    for (let n = 0; n < 40; n++) {
      bbans.push(Array.from({ length: 22 }, () => (seed = (seed * 48271) % 2147483647) % 10).join(''));
    }
    const ibans = bbans.flatMap((bban) =>
      Array.from({ length: 100 }, (_, check) => `IR${String(check).padStart(2, '0')}${bban}`),
    );
    const accepted = ibans.filter((iban) => normaliseIban(iban) === iban);
    expect(accepted).toEqual(ibans.filter((iban) => isValidIBAN(iban)));
    expect(accepted.length).toBeGreaterThanOrEqual(bbans.length);
  });

  it('rejects a bad checksum', () => {
    expect(referenceMod97('IR430570022880013447370101')).not.toBe(1);
    expect(normaliseIban('IR430570022880013447370101')).toBeNull();
    // one digit changed / two digits swapped in a valid IBAN
    expect(normaliseIban('IR820540102680020817909003')).toBeNull();
    expect(normaliseIban('IR820540102680020817909020')).toBeNull();
    expect(normaliseIban('IR830540102680020817909002')).toBeNull();
    expect(normaliseIban(fa('IR830540102680020817909002'))).toBeNull();
  });

  it('rejects valid IBANs of other countries', () => {
    for (const iban of [
      'GB82WEST12345698765432',
      'DE89370400440532013000',
      'GB82 WEST 1234 5698 7654 32',
      'NL91ABNA0417164300',
    ]) {
      expect(normaliseIban(iban)).toBeNull();
    }
  });

  it('rejects wrong lengths', () => {
    expect(normaliseIban('IR82054010268002081790900')).toBeNull();
    expect(normaliseIban('IR8205401026800208179090021')).toBeNull();
    expect(normaliseIban('IR82')).toBeNull();
  });

  it('rejects a missing country code, letters in the BBAN, and separators other than spaces', () => {
    expect(normaliseIban('820540102680020817909002')).toBeNull();
    expect(normaliseIban('IR82054010268002081790900A')).toBeNull();
    expect(normaliseIban('IR82-0540-1026-8002-0817-9090-02')).toBeNull();
    expect(normaliseIban('IR82.0540.1026.8002.0817.9090.02')).toBeNull();
    expect(normaliseIban('IR82\t0540102680020817909002')).toBeNull();
    expect(normaliseIban('')).toBeNull();
    expect(normaliseIban('    ')).toBeNull();
  });

  it('returns null rather than throwing on a non-string at run time', () => {
    expect(normaliseIban(null as unknown as string)).toBeNull();
    expect(normaliseIban(820540102680020817909002 as unknown as string)).toBeNull();
  });
});
