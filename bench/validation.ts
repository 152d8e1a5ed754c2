/**
 * Section 3: validator micro-benchmark. ops/s of normaliseNationalCode, normaliseIranianMobile
 * and normaliseIban against a reference measured in the same run with the same harness and the
 * same inputs: a plain regex test of the input's shape. Fixed iteration counts, median of rounds.
 */
import { performance } from 'node:perf_hooks';
import { normaliseIban } from '../src/inquiry/catalog/validators/iban.js';
import { normaliseIranianMobile } from '../src/inquiry/catalog/validators/mobile.js';
import { normaliseNationalCode } from '../src/inquiry/catalog/validators/national-code.js';
import { heading, num, ratio, table } from './lib/format.js';

export interface ValidationSettings {
  iterations: number;
  rounds: number;
  warmupIterations: number;
}

export interface ValidationCase {
  name: string;
  example: string;
  validatorOpsPerSecond: number;
  referenceOpsPerSecond: number;
  /** validator ops/s ÷ reference ops/s (below 1: the validator is slower). */
  ratio: number;
  validatorNsPerOp: number;
  referenceNsPerOp: number;
}

export interface ValidationResult {
  settings: ValidationSettings;
  cases: ValidationCase[];
}

const fa = (s: string) => s.replace(/[0-9]/g, (d) => '۰۱۲۳۴۵۶۷۸۹'[Number(d)]);
const friendly = (iban: string) =>
  iban
    .replace(/(.{4})/g, '$1 ')
    .trim()
    .toLowerCase();

const NATIONAL_CODES = [
  '0499370899',
  '0790419904',
  '0084575948',
  '0067749828',
  '0013542419',
  '0076229645',
  '1234567891',
];
const MOBILES = [
  '09121234567',
  '09351234567',
  '09901234567',
  '09631234567',
  '09191112233',
  '09011234567',
  '09381234567',
];
const IBANS = ['IR820540102680020817909002', 'IR062960000000100324200001', 'IR580540105180021273113007'];

interface Case {
  name: string;
  inputs: string[];
  validator: (input: string) => string | null;
  reference: RegExp;
}

const CASES: Case[] = [
  {
    name: 'normaliseNationalCode (ASCII)',
    inputs: NATIONAL_CODES,
    validator: normaliseNationalCode,
    reference: /^[0-9]{10}$/,
  },
  {
    name: 'normaliseNationalCode (Persian digits)',
    inputs: NATIONAL_CODES.map(fa),
    validator: normaliseNationalCode,
    reference: /^[0-9۰-۹٠-٩]{10}$/,
  },
  {
    name: 'normaliseIranianMobile (09...)',
    inputs: MOBILES,
    validator: normaliseIranianMobile,
    reference: /^09[0-9]{9}$/,
  },
  {
    name: 'normaliseIranianMobile (+98..., Persian)',
    inputs: MOBILES.map((m) => fa(`+98${m.slice(1)}`)),
    validator: normaliseIranianMobile,
    reference: /^\+[0-9۰-۹٠-٩]{12}$/,
  },
  { name: 'normaliseIban (electronic)', inputs: IBANS, validator: normaliseIban, reference: /^IR[0-9]{24}$/ },
  {
    name: 'normaliseIban (grouped, lower case)',
    inputs: IBANS.map(friendly),
    validator: normaliseIban,
    reference: /^ir[0-9]{2}( ?[0-9]{4}){5}( ?[0-9]{2})$/,
  },
];

/** Sink for results so that no call can be optimised away. */
let sink = 0;

/** One timed loop over the inputs, `iterations` calls; returns ops/s. */
function timeLoop(fn: (input: string) => unknown, inputs: readonly string[], iterations: number): number {
  const n = inputs.length;
  let acc = 0;
  const start = performance.now();
  for (let i = 0; i < iterations; i++) {
    if (fn(inputs[i % n])) acc++;
  }
  const elapsed = performance.now() - start;
  sink += acc;
  return iterations / (elapsed / 1000);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

export function benchValidation(settings: ValidationSettings, log: (line: string) => void): ValidationResult {
  const cases: ValidationCase[] = [];
  for (const c of CASES) {
    const validator = (input: string) => c.validator(input) !== null;
    const reference = (input: string) => c.reference.test(input);
    // Both must accept every input: the accept path is what is measured.
    for (const input of c.inputs) {
      if (!validator(input)) throw new Error(`${c.name}: the validator rejects ${JSON.stringify(input)}`);
      if (!reference(input)) throw new Error(`${c.name}: the reference regex rejects ${JSON.stringify(input)}`);
    }
    log(`  ${c.name}: ${settings.rounds} rounds x ${num(settings.iterations)} calls`);
    timeLoop(validator, c.inputs, settings.warmupIterations);
    timeLoop(reference, c.inputs, settings.warmupIterations);
    const v: number[] = [];
    const r: number[] = [];
    // Interleaved rounds, so that drift (frequency, GC) affects both alike.
    for (let round = 0; round < settings.rounds; round++) {
      v.push(timeLoop(validator, c.inputs, settings.iterations));
      r.push(timeLoop(reference, c.inputs, settings.iterations));
    }
    const validatorOps = median(v);
    const referenceOps = median(r);
    cases.push({
      name: c.name,
      example: c.inputs[0],
      validatorOpsPerSecond: validatorOps,
      referenceOpsPerSecond: referenceOps,
      ratio: validatorOps / referenceOps,
      validatorNsPerOp: 1e9 / validatorOps,
      referenceNsPerOp: 1e9 / referenceOps,
    });
  }
  if (sink < 0) log(String(sink)); // never true; keeps `sink` observable
  return { settings, cases };
}

export function formatValidation(result: ValidationResult): string {
  const { settings } = result;
  const rows = result.cases.map((c) => [
    c.name,
    num(c.validatorOpsPerSecond),
    num(c.validatorNsPerOp),
    num(c.referenceOpsPerSecond),
    num(c.referenceNsPerOp),
    ratio(c.ratio, 3),
    ratio(1 / c.ratio, 1),
    c.example,
  ]);
  return [
    heading('3. Validators vs a plain regex test of the same input (one core, same harness)'),
    `Median of ${settings.rounds} interleaved rounds of ${num(settings.iterations)} calls each (after ${num(settings.warmupIterations)} warm-up calls).`,
    '',
    table(
      ['case', 'validator ops/s', 'ns/op', 'regex ops/s', 'ns/op', 'validator/regex', 'slowdown', 'example input'],
      rows,
      [0, 7],
    ),
  ].join('\n');
}
